"""``make bench-advisor``: the advisor's predictions against ``make bench``'s measurements, on the bench's own
configurations (bench/executors.py), both measured in this run, alternately.

Per round and configuration: ``python -m trainer probe`` (two K by two batch sizes per executor, executors
interleaved), the advice at the full size (trainer/spec/advice.py), then right after it ``python -m trainer
bench`` on the same spec (executors interleaved, the bench's samples/s and step peak). Rounds alternate probe and
bench so that the shared machine's load falls on both alike; each figure is the median over the rounds, and the
ratio predicted / measured of each round is shown beside it. The predicted step peak is the advice's peak memory
less the resident bytes, against the bench's peak above the step's start (one definition: trainer/bench.py's).
Targets on this CPU: samples/s within 15 %, peak memory within 20 %. Writes bench/results/advisor.md and
advisor.json (``--regime compute``: advisor-compute.*).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))

from bench.executors import REGIMES, SINGLE  # noqa: E402
from bench.trainer_command import trainer_command  # noqa: E402
from trainer.run import load_spec  # noqa: E402
from trainer.spec.advice import predict  # noqa: E402
from trainer.spec.probe_report import ProbeReport  # noqa: E402

SPEED_TARGET, MEMORY_TARGET = 0.15, 0.20


def measure(folder: Path, index: int, job: dict[str, Any], names: str) -> dict[str, Any]:
    """One round of one configuration: the probe's advice, then the bench, back to back."""
    spec_path, probe_dir, bench_out = folder / f"{index}.json", folder / f"probe-{index}", folder / f"{index}.out.json"
    spec_path.write_text(json.dumps(job))
    devices = job["resources"]["devices"]
    one_thread = {**os.environ, "OMP_NUM_THREADS": "1"}  # as the bench runs every rank; torchrun prints no banner
    print(f"probe {job['name']}: {names}", flush=True)
    probe = trainer_command(devices, "probe", "--spec", str(spec_path), "--output-dir", str(probe_dir))
    subprocess.run([*probe, "--executors", names], cwd=REPO, check=True, stdout=subprocess.DEVNULL, env=one_thread)
    print(f"bench {job['name']}: {names}", flush=True)
    bench = trainer_command(devices, "bench", "--spec", str(spec_path), "--executors", names, "--rounds", "4")
    subprocess.run([*bench, "--json", str(bench_out)], cwd=REPO, check=True, stdout=subprocess.DEVNULL, env=one_thread)
    report = ProbeReport.model_validate_json((probe_dir / "probe.json").read_text())
    result = compared(spec_path, report, json.loads(bench_out.read_text()))
    if names != SINGLE:  # two runs of one shape, each with its own native, are told apart by what they ran
        result["config"] += f" ({' + '.join(names.split(','))})"
    return result


def compared(spec_path: Path, report: ProbeReport, measured: dict[str, Any]) -> dict[str, Any]:
    """The advice from ``report`` beside the bench report ``measured`` of the same spec, per executor."""
    answer = predict(load_spec(spec_path), report)
    rows = {}
    for row in answer.executors:
        bench_row = measured["executors"].get(row.executor)
        if row.samples_per_s is None or bench_row is None:
            continue
        rows[row.executor] = {
            "predicted_samples_per_s": row.samples_per_s,
            "measured_samples_per_s": bench_row["samples_per_s"],
            "predicted_speedup": row.speedup,
            "measured_speedup": bench_row["speedup"],
            "predicted_step_peak_bytes": (row.peak_memory_bytes or 0) - report.resident_bytes,
            "measured_step_peak_bytes": bench_row["peak_bytes"],
            "calibration": row.calibration,
        }
    config = f"{measured['finetune']} T={measured['T']} K={measured['K']} R={measured['world_size']}"
    return {"config": config, "resident_bytes": report.resident_bytes, "rows": rows}


def combined(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's rounds: per executor, the median of every figure and each round's ratios."""
    rows = []
    for executor in rounds[0]["rows"]:
        seen = [r["rows"][executor] for r in rounds if executor in r["rows"]]
        row = {key: statistics.median(s[key] for s in seen) for key in seen[0]}
        row["executor"] = executor
        row["speed_ratios"] = [s["predicted_samples_per_s"] / s["measured_samples_per_s"] for s in seen]
        row["peak_ratios"] = [s["predicted_step_peak_bytes"] / max(1, s["measured_step_peak_bytes"]) for s in seen]
        rows.append(row)
    return {"config": rounds[0]["config"], "resident_bytes": rounds[0]["resident_bytes"], "rows": rows}


def error(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured if measured else float("inf")


def ratios(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| config | executor | samples/s predicted | measured | error | ratio per round | speedup predicted "
        "| measured | step peak MiB predicted | measured | error | ratio per round |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    speed_ok = memory_ok = speedup_ok = speedups = total = 0
    for result in results:
        for r in result["rows"]:
            speed = error(r["predicted_samples_per_s"], r["measured_samples_per_s"])
            memory = error(r["predicted_step_peak_bytes"], r["measured_step_peak_bytes"])
            speed_ok += abs(speed) <= SPEED_TARGET
            memory_ok += abs(memory) <= MEMORY_TARGET
            total += 1
            if r["executor"] != "native":  # native's speedup is 1 by definition
                speedups += 1
                speedup_ok += abs(error(r["predicted_speedup"], r["measured_speedup"])) <= SPEED_TARGET
            lines.append(
                f"| {result['config']} | {r['executor']} | {r['predicted_samples_per_s']:.2f} "
                f"| {r['measured_samples_per_s']:.2f} | {speed:+.0%} | {ratios(r['speed_ratios'])} "
                f"| {r['predicted_speedup']:.2f} | {r['measured_speedup']:.2f} "
                f"| {r['predicted_step_peak_bytes'] / 2**20:.2f} | {r['measured_step_peak_bytes'] / 2**20:.2f} "
                f"| {memory:+.0%} | {ratios(r['peak_ratios'])} |"
            )
    lines.append("")
    lines.append(
        f"Within target: samples/s {speed_ok}/{total} rows (|error| <= {SPEED_TARGET:.0%}), "
        f"step peak {memory_ok}/{total} rows (|error| <= {MEMORY_TARGET:.0%}); speedup over native "
        f"{speedup_ok}/{speedups} rows (|error| <= {SPEED_TARGET:.0%})."
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/advisor.py")
    parser.add_argument("--regime", choices=sorted(REGIMES), default="overhead")
    parser.add_argument("--rounds", type=int, default=3, help="alternating probe and bench runs per configuration")
    arguments = parser.parse_args()
    regime = arguments.regime
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        if regime == "compute":
            from bench.executors import COMPUTE_BOUND, SIZED
            from trainer.models.sized_sd3 import build_sized_sd3

            sized = str(build_sized_sd3(folder / "sized", COMPUTE_BOUND))
        configurations = REGIMES[regime][1]
        if regime == "compute":
            configurations = [
                ({**job, "model": {**job["model"], "path": sized}} if job["model"]["path"] == SIZED else job, names)
                for job, names in configurations
            ]
        runs: list[list[dict[str, Any]]] = [[] for _ in configurations]
        for round_ in range(arguments.rounds):
            print(f"round {round_ + 1} of {arguments.rounds}", flush=True)
            for index, (job, names) in enumerate(configurations):
                runs[index].append(measure(folder, index, job, names))
            text = write(regime, runs, round_ + 1)  # each round's medians so far, should a later one not finish
    print(text)
    return 0


def write(regime: str, runs: list[list[dict[str, Any]]], rounds: int) -> str:
    results = [combined(configuration) for configuration in runs]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    text = f"# Advisor against the bench (make bench-advisor)\n\n## {REGIMES[regime][0]}\n\n"
    text += f"Medians over {rounds} round(s), each a probe and then a bench run of every configuration.\n\n"
    text += f"{markdown(results)}\n"
    text += f"\nLoad average at the end (1, 5, 15 min): {load} on {os.cpu_count()} cores.\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "advisor" if regime == "overhead" else f"advisor-{regime}"
    (RESULTS / f"{name}.md").write_text(text)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2))
    return text


if __name__ == "__main__":
    sys.exit(main())
