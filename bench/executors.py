"""``make bench``: the standard executor benchmark set, written under bench/results/.

One process each (native, lean_retain, lean_reweight, jagg interleaved) for the tiny SD3 model
at T = 10 with K = 9 and K = 4, full fine-tuning and LoRA; then two gloo ranks for
lean_reweight's single all-reduce and for digenrl (1 generator + 1 trainer). K = T is
impossible: the near-clean last step is never trained (the spec refuses K >= T), so K = 9 is
the full trajectory. Writes executors.md (the table) and executors.json (every report).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))

from trainer.bench import markdown  # noqa: E402

SINGLE = "native,lean_retain,lean_reweight,jagg"


def spec(finetune: str, trained: int, devices: int = 1, executor: dict[str, Any] | None = None) -> dict[str, Any]:
    model: dict[str, Any] = {"family": "sd3", "path": "builtin:tiny", "finetune": finetune}
    return {
        "name": f"bench-{finetune}-k{trained}-r{devices}",
        "model": model,
        "algorithm": {
            "name": "flow_grpo",
            "sampling_steps": 10,
            "train_timesteps": trained,
            "group_size": 4,
            "prompts_per_step": 2 if devices > 1 else 1,
            "total_steps": 10,
            "global_std": False,
        },
        "executor": executor or {"name": "native"},
        "reward": [{"name": "prompt_color_match"}],
        "resources": {"devices": devices},
        "samples": {"count": 0},
        "checkpoint": {"every": 0},
    }


RUNS: list[tuple[dict[str, Any], str]] = [
    (spec("full", 9), SINGLE),
    (spec("lora", 9), SINGLE),
    (spec("full", 4), SINGLE),
    (spec("lora", 4), SINGLE),
    (spec("full", 4, devices=2), "native,lean_reweight"),
    (spec("full", 4, devices=2, executor={"name": "digenrl", "timestep_batch": 4}), "native,digenrl"),
]


def main() -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    reports = []
    with tempfile.TemporaryDirectory() as folder:
        for index, (job, executors) in enumerate(RUNS):
            path, out = Path(folder) / f"{index}.json", Path(folder) / f"{index}.out.json"
            path.write_text(json.dumps(job))
            devices = job["resources"]["devices"]
            launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={devices}"]
            command = [
                *(launcher if devices > 1 else [sys.executable]),
                "-m",
                "trainer",
                "bench",
                "--spec",
                str(path),
                "--executors",
                executors,
                "--rounds",
                "4",
                "--json",
                str(out),
            ]
            print(f"bench {job['name']}: {executors}", flush=True)
            subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
            reports.append(json.loads(out.read_text()))
    table = markdown(reports)
    notes = "\n".join(
        f"- {r['finetune']} T={r['T']} K={r['K']} R={r['world_size']}: b = {r['b_measured']:.2f}, "
        f"ideal Lean speedup (T+(1+b)K)/(T+bK) = {r['ideal_lean_speedup']:.2f}x, t_fix = {r['fixed_seconds']:.3f} s"
        for r in reports
    )
    (RESULTS / "executors.md").write_text(
        "# Executor benchmark (make bench)\n\n"
        + table
        + "\n\n"
        + notes
        + "\n\nPeak memory: "
        + reports[0]["memory_method"]
        + ".\n"
    )
    (RESULTS / "executors.json").write_text(json.dumps(reports, indent=2))
    print(table)
    print(notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
