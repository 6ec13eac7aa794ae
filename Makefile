# Set-up is part of every target: a fresh machine needs only `make run` or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
WEB_STAMP := web/node_modules/.installed

.PHONY: install run test lint bench bench-executors bench-advisor bench-learn bench-geneval bench-audit bench-web bench-platform bench-rewards bench-artifacts gpu-check fuzz mutation

install: $(STAMP) $(WEB_STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

$(WEB_STAMP): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

# `make run PORT=8080 HOST=0.0.0.0` serves elsewhere (`sfumato up --port/--host`).
PORT ?= 8000
HOST ?= 127.0.0.1
run: install
	$(VENV)/bin/sfumato up --host $(HOST) --port $(PORT)

# The suite on TEST_WORKERS pytest-xdist workers; a test file stays on one worker (tests/conftest.py).
TEST_WORKERS ?= 2
test: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

lint: install
	$(VENV)/bin/ruff check .

# A long schemathesis fuzz of the whole OpenAPI against a live server on PostgreSQL (tests/security/openapi_fuzz.py).
FUZZ_EXAMPLES ?= 50
fuzz: install
	SFUMATO_TEST_POSTGRES_URL=$${SFUMATO_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/postgres} \
		$(PY) tests/security/openapi_fuzz.py --examples $(FUZZ_EXAMPLES)

# Mutation testing (mutmut) of the modules that decide correctness and access, each with the tests that state its
# behaviour, in a scratch copy; outside make test (bench/results/mutation.md). MUTATION_ARGS="--only trainer/loss.py".
mutation: install
	$(PY) bench/mutation.py $(MUTATION_ARGS)

bench-learn: install
	$(PY) bench/learn.py

# The shapes model trained on builtin:shapes-geneval with the geneval reward, its reward curve
# (bench/results/shapes-geneval.md, docs/images/shapes-geneval-curve.png), at the one configuration under which
# the reward rose and the held-out score did not fall: square captions only, 1 x 16, SDE level 1.0, KL 0.04, lr 1e-4.
bench-geneval: install
	$(PY) bench/shapes_geneval.py --shapes square --prompts-per-step 1 --group-size 16 --noise-level 1.0 --kl-beta 0.04 --learning-rate 1e-4

# The executors' audit over every family x algorithm x executor on the tiny models (bench/results/family-audit.md);
# AUDIT_ARGS="--cases flux_kontext" re-runs some cases and keeps the other rows.
bench-audit: install
	$(PY) bench/family_audit.py $(AUDIT_ARGS)

# Executors interleaved in one process against their analytical bounds (bench/results/executors.md).
bench: bench-executors

bench-executors: install
	$(PY) bench/executors.py

# The remote reward's overhead on the step time of 2 trainers sharing one reward server, and the server's
# images/s (bench/results/rewards.md).
bench-rewards: install
	$(PY) bench/rewards.py

# The advisor's predictions (a probe at reduced K and batch) against the bench's measurements of the same configurations,
# measured in the same run (bench/results/advisor.md).
bench-advisor: install
	$(PY) bench/advisor.py

# Every executor on an SD3-shaped model that saturates a GPU (bf16, 1024 image tokens, hidden 1536, 12 blocks):
# the bench tables and the audit, on 1 rank and, with 2+ GPUs, 2 ranks under FSDP; CUDA only (bench/results/gpu.md).
gpu-check: install
	$(PY) bench/gpu_check.py

# Server time of the pages on PostgreSQL with 100 jobs and a 1,000,000-point job; creates and drops its own database.
SFUMATO_BENCH_POSTGRES_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/postgres
bench-web: install
	SFUMATO_BENCH_POSTGRES_URL=$(SFUMATO_BENCH_POSTGRES_URL) $(PY) bench/web.py

# The platform against its speed targets (ingestion, reads, dispatch, reporting overhead, API under load): a real
# server, worker and scheduler on a fresh PostgreSQL database (dropped afterwards) and Redis; bench/results/platform.md.
SFUMATO_BENCH_REDIS_URL ?= redis://127.0.0.1:6379/0
bench-platform: install
	SFUMATO_BENCH_POSTGRES_URL=$(SFUMATO_BENCH_POSTGRES_URL) SFUMATO_BENCH_REDIS_URL=$(SFUMATO_BENCH_REDIS_URL) \
		$(PY) bench/platform_speed.py

# The upload of a 100 MB artifact by the trainer's reporter and `sfumato download` of it, timed, on a `sfumato server`
# of its own in a temporary folder; bench/results/artifacts.md.
bench-artifacts: install
	$(PY) bench/artifacts.py
