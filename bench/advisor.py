"""``make bench-advisor``: the advisor's predictions against ``make bench``'s measurements, on the bench's own
configurations (bench/executors.py), both measured in this run.

Per configuration: ``python -m trainer probe`` (two K by two batch sizes per executor), the advice at the full
size (trainer/spec/advice.py), then ``python -m trainer bench`` on the same spec (executors interleaved, the
bench's samples/s and step peak). Predicted samples/s is compared with the bench's; the predicted step peak
(the advice's peak memory less the resident bytes) with the bench's peak above the step's start. Targets on this
CPU: samples/s within 15 %, peak memory within 20 %. The speedup over native (predicted against the bench's) is
shown too: timed minutes apart on a shared machine, both runs' absolute speeds move with its load, their
ratios much less. Writes bench/results/advisor.md and advisor.json
(``--regime compute``: advisor-compute.*).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))

from bench.executors import REGIMES  # noqa: E402
from trainer.run import load_spec  # noqa: E402
from trainer.spec.advice import advise  # noqa: E402
from trainer.spec.probe_report import ProbeReport  # noqa: E402

SPEED_TARGET, MEMORY_TARGET = 0.15, 0.20


def single_process_runs(regime: str) -> list[tuple[dict[str, Any], str]]:
    """The regime's one-process configurations (the probe runs every executor in one process group)."""
    return [(job, names) for job, names in REGIMES[regime][1] if job["resources"]["devices"] == 1]


def measure(folder: Path, index: int, job: dict[str, Any], names: str) -> dict[str, Any]:
    spec_path, probe_dir, bench_out = folder / f"{index}.json", folder / f"probe-{index}", folder / f"{index}.out.json"
    spec_path.write_text(json.dumps(job))
    trainer = [sys.executable, "-m", "trainer"]
    print(f"probe {job['name']}: {names}", flush=True)
    probe = [*trainer, "probe", "--spec", str(spec_path), "--output-dir", str(probe_dir), "--executors", names]
    one_thread = {**os.environ, "OMP_NUM_THREADS": "1"}  # as the bench runs every rank
    subprocess.run(probe, cwd=REPO, check=True, stdout=subprocess.DEVNULL, env=one_thread)
    print(f"bench {job['name']}: {names}", flush=True)
    bench = [
        *trainer,
        "bench",
        "--spec",
        str(spec_path),
        "--executors",
        names,
        "--rounds",
        "4",
        "--json",
        str(bench_out),
    ]
    subprocess.run(bench, cwd=REPO, check=True, stdout=subprocess.DEVNULL, env=one_thread)
    report = ProbeReport.model_validate_json((probe_dir / "probe.json").read_text())
    answer = advise(load_spec(spec_path), report, None)
    measured = json.loads(bench_out.read_text())
    rows = []
    for row in answer.executors:
        bench_row = measured["executors"].get(row.executor)
        if row.samples_per_s is None or bench_row is None:
            continue
        rows.append(
            {
                "executor": row.executor,
                "predicted_samples_per_s": row.samples_per_s,
                "measured_samples_per_s": bench_row["samples_per_s"],
                "predicted_speedup": row.speedup,
                "measured_speedup": bench_row["speedup"],
                "predicted_step_peak_bytes": (row.peak_memory_bytes or 0) - report.resident_bytes,
                "measured_step_peak_bytes": bench_row["peak_bytes"],
                "calibration": row.calibration,
            }
        )
    config = f"{measured['finetune']} T={measured['T']} K={measured['K']} R={measured['world_size']}"
    return {"config": config, "resident_bytes": report.resident_bytes, "rows": rows}


def error(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured if measured else float("inf")


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| config | executor | samples/s predicted | measured | error | speedup predicted | measured "
        "| step peak MiB predicted | measured | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    speed_ok = memory_ok = total = 0
    for result in results:
        for r in result["rows"]:
            speed = error(r["predicted_samples_per_s"], r["measured_samples_per_s"])
            memory = error(r["predicted_step_peak_bytes"], r["measured_step_peak_bytes"])
            speed_ok += abs(speed) <= SPEED_TARGET
            memory_ok += abs(memory) <= MEMORY_TARGET
            total += 1
            lines.append(
                f"| {result['config']} | {r['executor']} | {r['predicted_samples_per_s']:.2f} "
                f"| {r['measured_samples_per_s']:.2f} | {speed:+.0%} | {r['predicted_speedup']:.2f} "
                f"| {r['measured_speedup']:.2f} | {r['predicted_step_peak_bytes'] / 2**20:.2f} "
                f"| {r['measured_step_peak_bytes'] / 2**20:.2f} | {memory:+.0%} |"
            )
    lines.append("")
    lines.append(
        f"Within target: samples/s {speed_ok}/{total} rows (|error| <= {SPEED_TARGET:.0%}), "
        f"step peak {memory_ok}/{total} rows (|error| <= {MEMORY_TARGET:.0%})."
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/advisor.py")
    parser.add_argument("--regime", choices=sorted(REGIMES), default="overhead")
    regime = parser.parse_args().regime
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        if regime == "compute":
            from bench.executors import COMPUTE_BOUND, SIZED
            from trainer.models.sized_sd3 import build_sized_sd3

            sized = str(build_sized_sd3(folder / "sized", COMPUTE_BOUND))
        for index, (job, names) in enumerate(single_process_runs(regime)):
            if regime == "compute" and job["model"]["path"] == SIZED:
                job = {**job, "model": {**job["model"], "path": sized}}
            results.append(measure(folder, index, job, names))
    title = REGIMES[regime][0]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    text = f"# Advisor against the bench (make bench-advisor)\n\n## {title}\n\n{markdown(results)}\n"
    text += f"\nLoad average at the end (1, 5, 15 min): {load} on {os.cpu_count()} cores.\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "advisor" if regime == "overhead" else f"advisor-{regime}"
    (RESULTS / f"{name}.md").write_text(text)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
