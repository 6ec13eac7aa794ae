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

from trainer.spec import EXECUTORS as ALL_EXECUTORS

REPO = Path(__file__).resolve().parents[2]
EXECUTORS = tuple(name for name in ALL_EXECUTORS if name != "digenrl")  # one rank: digenrl needs two


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


def test_the_small_gpu_check_benches_and_audits_every_one_rank_executor_in_bf16(
    small_gpu_check: tuple[str, str],
) -> None:
    report = small_gpu_check[0]
    for name in EXECUTORS:
        assert re.search(rf"^\| full T=5 K=4 R=1 \| {name} \|", report, re.MULTILINE), name
    audits = audits_of(report)
    assert list(audits) == ["1 rank, bf16"]  # --small: the bf16 audit only; on CUDA the fp32 one follows it
    assert set(audits["1 rank, bf16"]["executors"]) == set(EXECUTORS) - {"native"}


def audits_of(report: str) -> dict[str, dict[str, Any]]:
    """Each audit's JSON by its label ("1 rank, bf16: ```json ... ```")."""
    blocks = re.findall(r"^([^\n]+):\n\n```json\n(.*?)\n```", report, re.MULTILINE | re.DOTALL)
    return {label: json.loads(block) for label, block in blocks}


def test_the_small_gpu_check_s_bf16_audit_judges_both_updates_and_the_kl_apart(
    small_gpu_check: tuple[str, str],
) -> None:
    """The audit's step: β 0.04 (the policy moved off the reference) and two updates a rollout, in bf16, the bounds
    three times native's own difference one row a micro-batch."""
    audit = audits_of(small_gpu_check[0])["1 rank, bf16"]
    assert (audit["precision"], audit["terms"], audit["updates"]) == ("bf16", ["total", "policy", "kl"], 2)
    assert audit["reference_offset"] > 0 and audit["native_metrics"]["kl"] > 0
    bf16 = audit["native_floor"]
    assert (bf16["safety_factor"], bf16["micro_batches"]) == (3.0, 2)
    assert all(floor > 0 for floors in bf16["floor"].values() for floor in floors)


def test_the_small_gpu_check_s_audit_passes_the_exact_executors_and_reports_jagg_close_to_native(
    small_gpu_check: tuple[str, str],
) -> None:
    """Flow-GRPO at T = 5, K = 4 in bf16: lean_retain (E0) and lean_reweight (E1) within the bf16 class on every update
    and term; jagg's one routed group of width 4 interpolates two of its steps in each update, a report.
    On the CPU native's first ratio, and every executor's, is 1."""
    audit = audits_of(small_gpu_check[0])["1 rank, bf16"]
    executors = audit["executors"]
    assert audit["native_first_update_ratio_distance"] == 0.0
    for name, exactness in (("lean_retain", "E0"), ("lean_reweight", "E1")):
        result = executors[name]
        assert (result["class"], result["exactness"], result["verdict"]) == ("bf16", exactness, "pass"), name
        verdicts = [t["verdict"] for u in result["updates"] for t in u["terms"].values()]
        assert verdicts == ["pass"] * 6 and result["first_update_ratio_distance"] == 0.0, name
    jagg = executors["jagg"]
    assert (jagg["class"], jagg["verdict"], jagg["routed_groups"]) == ("A", "report", 2)  # one group each update
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


def test_the_small_placements_table_shows_the_reference_off_the_device(tmp_path: Path) -> None:
    """``--small --placements`` (docs/memory-and-timing.md's table): native and lean_retain under each placement of
    the frozen parts; the reference holds device memory only where it is kept there, and the peak falls without it."""
    env = {**os.environ, "SFUMATO_HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--small", "--placements"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = re.findall(r"^\| (gpu|cpu|free) \| (device|cpu) \| (\w+) \| (.*) \|$", result.stdout, re.MULTILINE)
    figures = {(encoders, reference, name): [float(v) for v in cells.split(" | ")] for encoders, reference, name, cells
               in rows}  # fmt: skip
    places = [("gpu", "device"), ("cpu", "cpu"), ("free", "cpu")]
    assert list(figures) == [(*place, name) for place in places for name in ("native", "lean_retain")]
    for (_, reference, name), cells in figures.items():
        assert (cells[1] > 0) == (reference == "device"), name  # the reference column
    for name in ("native", "lean_retain"):
        assert figures[("cpu", "cpu", name)][-1] < figures[("gpu", "device", name)][-1], name  # the peak
