"""``make gpu-check`` (bench/gpu_check.py) runs, at a reduced size on the CPU, so it cannot rot unseen."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXECUTORS = ("native", "lean_retain", "lean_reweight", "jagg")


@pytest.fixture(scope="module")
def small_gpu_check(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(the report it writes, everything it printed) of one run with --small."""
    folder = tmp_path_factory.mktemp("gpu-check")
    env = {**os.environ, "SFUMATO_HOME": str(folder), "OMP_NUM_THREADS": "1"}
    output = folder / "gpu.md"
    result = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--small", "--output", str(output)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return output.read_text(), result.stdout + result.stderr


def test_the_small_gpu_check_benches_and_audits_every_one_rank_executor(small_gpu_check: tuple[str, str]) -> None:
    report, _ = small_gpu_check
    for name in EXECUTORS:
        assert re.search(rf"^\| full T=5 K=4 R=1 \| {name} \|", report, re.MULTILINE), name
    assert set(audit_of(report)["executors"]) >= set(EXECUTORS) - {"native"}


def audit_of(report: str) -> dict[str, Any]:
    return json.loads(report[report.index("```json") + len("```json") : report.rindex("```")])


def test_the_small_gpu_check_s_audit_passes_the_exact_executors_and_reports_jagg_close_to_native(
    small_gpu_check: tuple[str, str],
) -> None:
    """Flow-GRPO at T = 5, K = 4: lean_retain is native bit for bit (E0), lean_reweight within 1e-5 (E1); jagg's
    one routed group of width 4 interpolates two of its steps (cosine 0.97 on this model), a report."""
    executors = audit_of(small_gpu_check[0])["executors"]
    assert (executors["lean_retain"]["class"], executors["lean_retain"]["verdict"]) == ("E0", "pass")
    assert (executors["lean_reweight"]["class"], executors["lean_reweight"]["verdict"]) == ("E1", "pass")
    jagg = executors["jagg"]
    assert (jagg["class"], jagg["verdict"], jagg["routed_groups"]) == ("A", "report", 1)
    assert jagg["cosine"] >= 0.9 and jagg["rel_l2"] <= 0.5


def test_the_benchmark_prints_no_profiler_lines(small_gpu_check: tuple[str, str]) -> None:
    _, printed = small_gpu_check
    assert "USDT:" not in printed and "STAGE:" not in printed and "CPUAllocator" not in printed


def test_the_gpu_check_puts_the_advisor_s_prediction_beside_the_bench(small_gpu_check: tuple[str, str]) -> None:
    report, _ = small_gpu_check
    advised = report[report.index("## The advisor's prediction") : report.index("## Gradient audit")]
    for name in EXECUTORS:
        assert re.search(rf"^\| full T=5 K=4 R=1 \| {name} \| \d+\.\d+ \| \d+\.\d+ \|", advised, re.MULTILINE), name
    assert "Within target:" in advised
