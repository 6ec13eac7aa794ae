"""The advisor lists jagg_retain and jagg_reweight (issue 29): the probe measures them on the tiny model like every
executor the spec accepts, with jagg's routing from the spec, and the advice gives each its predicted speedup from
the shared cost model, its class (A) and its gradient cosine with native's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.services.advice_verdict import advice_answer
from tests.executors.conftest import audit_spec
from trainer.probe.measure import probe
from trainer.run import load_spec
from trainer.spec.advice import predict
from trainer.spec.probe_report import ProbeReport

COMPOSED = ("jagg_retain", "jagg_reweight")
# K = 5 with W = 4: one routed group at both of the probe's K (4 and 5).
SPEC = audit_spec(
    algorithm={"sampling_steps": 6, "train_timesteps": 5, "prompts_per_step": 2, "group_size": 2},
    executor={"name": "jagg", "group_width": 4},
)


@pytest.fixture(scope="module")
def probed(
    tmp_path_factory: pytest.TempPathFactory, sfumato_home: Path, tiny_model_dir: Path
) -> tuple[Path, ProbeReport]:
    path = tmp_path_factory.mktemp("probe-composed") / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path, probe(path, ["native", *COMPOSED])


@pytest.mark.parametrize("name", COMPOSED)
def test_the_advice_table_lists_each_composed_executor_with_a_prediction(
    probed: tuple[Path, ProbeReport], name: str
) -> None:
    path, report = probed
    rows = {row.executor: row for row in advice_answer(predict(load_spec(path), report), None).executors}
    row = rows[name]
    assert row.samples_per_s is not None and row.samples_per_s > 0 and row.speedup is not None
    assert row.exactness == "A" and row.gradient_cosine is not None and row.gradient_cosine > 0.9
