"""The bugs issue 34 found passing the suite, each applied again to a scratch copy and run against the tests that
must now catch it: a bug is caught when its tests fail.

    python bench/why_mutations.py                 # every bug, one at a time
    python bench/why_mutations.py --only loss     # the bugs whose name contains "loss"

(The worker kill that lost a `loss` point needs the fault harness's processes: tests/faults/fault_harness.py's
steps_off_per_key holds every key to each step once after every fault test, outside this script.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.mutation import scratch_copy  # noqa: E402


@dataclass(frozen=True)
class Bug:
    name: str
    path: str
    edits: tuple[tuple[str, str], ...]  # (text, its replacement), each text found exactly once
    tests: tuple[str, ...]  # pytest arguments


BUGS = (
    Bug(
        "metric history read without VisibleJob",
        "server/api/routes/metrics.py",
        (
            ("def get_metric_history(\n    job: VisibleJob,", "def get_metric_history(\n    job_id: int,"),
            (
                "metric_history.metric_history(session, job.id, key,",
                "metric_history.metric_history(session, job_id, key,",
            ),
        ),
        ("tests/security/test_route_table_cross_team.py", "-k", "history"),
    ),
    Bug(
        "scoping without the owner condition of a teamless job",
        "server/services/scoping.py",
        (
            ("and_(Job.team_id.is_(None), Job.owner_id == caller.user_id)", "Job.team_id.is_(None)"),
            ("(j.team_id IS NULL AND j.owner_id = :user_id)", "(j.team_id IS NULL)"),
        ),
        ("tests/security/test_route_table_cross_team.py", "-k", "teamless"),
    ),
    Bug(
        "the PPO clip's torch.maximum turned into torch.minimum",
        "trainer/loss.py",
        (("torch.maximum(unclipped, clipped)", "torch.minimum(unclipped, clipped)"),),
        ("tests/trainer/test_loss_against_formula.py",),
    ),
    Bug(
        "JAGG's routed gradient with its sign flipped",
        "trainer/executors/jagg.py",
        (
            (
                "torch.autograd.backward(endpoints, [s_base, s_corr])",
                "torch.autograd.backward(endpoints, [-s_base, -s_corr])",
            ),
        ),
        ("tests/executors/test_jagg_against_native.py",),
    ),
    Bug(
        "a NaN cosine clamped to 1.0",
        "trainer/executors/gradient_cosine.py",
        (("return raw if math.isnan(raw) else max(-1.0, min(1.0, raw))", "return max(-1.0, min(1.0, raw))"),),
        ("tests/executors/test_gradient_cosine.py", "tests/executors/test_audit_nan_verdict.py"),
    ),
    Bug(
        "ingestion matching a run of steps' keys by count instead of by name",
        "server/services/metric_blocks.py",
        (("tuple(steps[end].values) == keys", "len(steps[end].values) == len(keys)"),),
        ("tests/server/test_ingest_key_names.py",),
    ),
    Bug(
        "a quota that forgets reward-service devices",
        "server/services/placement_pass.py",
        (("for owner in (Job, RewardService):", "for owner in (Job,):"),),
        ("tests/server/scheduling/test_team_quotas.py",),
    ),
    Bug(
        "a quota that counts a multi-node job as one node",
        "server/services/placement_pass.py",
        (
            ("usage.get(job.team_id, 0) + job.devices * job.nodes", "usage.get(job.team_id, 0) + job.devices"),
            ("need = job.devices * job.nodes", "need = job.devices"),
        ),
        ("tests/server/scheduling/test_team_quotas.py",),
    ),
)


def run_bug(scratch: Path, bug: Bug) -> tuple[str, float]:
    """'caught' when the tests fail on the bug, 'missed' when they pass; the seconds they took."""
    source = scratch / bug.path
    original = source.read_text()
    mutated = original
    for text, replacement in bug.edits:
        if mutated.count(text) != 1:
            raise SystemExit(f"{bug.name}: {text!r} is not in {bug.path} exactly once (the code moved: update BUGS)")
        mutated = mutated.replace(text, replacement)
    source.write_text(mutated)
    began = time.perf_counter()
    try:
        command = [sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider", *bug.tests]
        code = subprocess.run(command, cwd=scratch, capture_output=True, check=False).returncode
    finally:
        source.write_text(original)
    verdict = {0: "missed", 1: "caught"}.get(code, f"pytest exit {code}")
    return verdict, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="the bugs whose name contains this")
    args = parser.parse_args()
    chosen = [bug for bug in BUGS if args.only is None or args.only in bug.name]
    print("| bug | file | tests | verdict | seconds |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="sfumato-why-") as folder:
        scratch = Path(folder)
        scratch_copy(REPO, scratch)
        for bug in chosen:
            verdict, seconds = run_bug(scratch, bug)
            print(f"| {bug.name} | {bug.path} | `{' '.join(bug.tests)}` | {verdict} | {seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
