"""``make gpu-check``: every executor on an SD3-shaped model large enough to saturate a GPU.

The model is SD3-Medium's width (hidden 1536, heads of 64) at half its depth (12 blocks) and
1024 image tokens (a 64 x 64 latent, 512 px), random weights, built from a config with the real
``SD3Transformer2DModel`` class, written with ``save_pretrained`` and loaded through
``from_pretrained`` (``trainer/models/sized_sd3.py``). On CUDA, in bf16, full fine-tuning:

1. one rank: native, lean_retain, lean_reweight and jagg interleaved (``python -m trainer bench``),
   the advisor's probe of the same spec (``python -m trainer probe``) with its predictions beside the bench's
   measurements, then their gradient audit (``python -m trainer audit``, deterministic kernels) in bf16, by the
   audit's bf16 class, and in fp32, by the exactness classes, on the audit's step (``AUDITED``: with a KL and two
   optimizer updates a rollout, so that the KL term and the later update are judged apart);
2. with 2+ GPUs, two ranks under FSDP (``model.sharding: fsdp``): every executor the spec accepts
   there, bench and both audits, and digenrl (one generator, one trainer);
3. one rank's step memory by component with the frozen parts on the device and off it (``PLACEMENTS``:
   ``model.text_encoders`` and ``model.reference``), native and lean_retain on the bench's spec with the audit's KL.

It prints the bench tables and the audit JSON and, on CUDA, writes them to bench/results/gpu.md.
``--small`` runs the same on the CPU at a reduced size, with the bf16 audit only: the suite's check that this
command keeps working (tests/executors/test_gpu_check.py). ``--placements`` runs part 3 alone (with ``--small``: on
the CPU, where the host is the device, so a part moved off it leaves the count as it would on a GPU only because the
host copies are counted as the host's; docs/memory-and-timing.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))

from bench.advisor import combined, compared  # noqa: E402
from bench.advisor import markdown as advisor_markdown  # noqa: E402
from bench.trainer_command import trainer_command  # noqa: E402
from trainer.bench import markdown  # noqa: E402
from trainer.models.sized_sd3 import SD3Size, build_sized_sd3  # noqa: E402
from trainer.spec import EXECUTORS, parse_spec  # noqa: E402
from trainer.spec.probe_report import ProbeReport  # noqa: E402
from trainer.step_memory import COMPONENTS  # noqa: E402

SATURATING = SD3Size(hidden=1536, blocks=12, latent_size=64)
SMALL = SD3Size(hidden=64, blocks=1, latent_size=8)
ONE_RANK = [name for name in EXECUTORS if name != "digenrl"]  # digenrl needs a rollout and a trainer rank
# The audit's step: Flow-GRPO's KL on SD3.5 (β 0.04, its GenEval value), the policy moved off the reference by the
# audit, and two optimizer updates a rollout (the Lean executors' hybrid schedule): every update and both terms judged.
AUDITED = {"kl_beta": 0.04, "inner_epochs": 2}
AUDIT_EXECUTOR = {"name": "lean_reweight", "kl": "extra_vjp", "after_first_update": "native"}
# (model.text_encoders, model.reference): the frozen parts on the device, then moved off it.
PLACEMENTS = (("gpu", "device"), ("cpu", "cpu"), ("free", "cpu"))
PLACED_EXECUTORS = ["native", "lean_retain"]


def job(model: Path, device: str, small: bool, ranks: int = 1, **model_fields: Any) -> dict[str, Any]:
    return {
        "name": f"gpu-check-r{ranks}",
        "model": {"family": "sd3", "path": str(model), "finetune": "full", "precision": "bf16", **model_fields},
        "algorithm": {
            "name": "flow_grpo",
            "sampling_steps": 5 if small else 10,
            "train_timesteps": 4,
            "group_size": 2 if small else 4,
            "prompts_per_step": ranks,
            "total_steps": 10,
            "global_std": False,
        },
        "executor": {"name": "native"},
        "reward": [{"name": "prompt_color_match"}],
        "resources": {"devices": ranks, "device_type": device},
        "samples": {"count": 0},
        "checkpoint": {"every": 0},
    }


def launch(command: list[str], label: str) -> subprocess.CompletedProcess[str] | str:
    """The finished process, or why it failed: one configuration's failure is reported with the others'
    results instead of losing them (a GPU's time is scarce)."""
    print(label, flush=True)
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode not in (0, 1):  # the audit exits 1 when a verdict fails: a result, not a crash
        sys.stderr.write(result.stderr[-4000:])
        return f"{label} failed (exit {result.returncode}): {result.stderr.strip().splitlines()[-1:]}"
    return result


def bench(folder: Path, spec: dict[str, Any], executors: list[str], rounds: int) -> dict[str, Any] | str:
    path, out = folder / f"{spec['name']}.json", folder / f"{spec['name']}.bench.json"
    path.write_text(json.dumps(spec))
    command = trainer_command(spec["resources"]["devices"], "bench", "--spec", str(path), "--json", str(out))
    result = launch([*command, "--executors", ",".join(executors), "--rounds", str(rounds)], f"bench {spec['name']}")
    return result if isinstance(result, str) else json.loads(out.read_text())


def audit(folder: Path, spec: dict[str, Any], executors: list[str], precision: str) -> dict[str, Any] | str:
    """The audit JSON of the audit's step (``AUDITED``) in ``precision``."""
    spec = {
        **spec,
        "name": f"{spec['name']}-audit-{precision}",
        "model": {**spec["model"], "precision": precision},
        "algorithm": {**spec["algorithm"], **AUDITED},
        "executor": AUDIT_EXECUTOR,
    }
    path = folder / f"{spec['name']}.json"
    path.write_text(json.dumps(spec))
    command = trainer_command(spec["resources"]["devices"], "audit", "--spec", str(path))
    result = launch([*command, "--executors", ",".join(executors)], f"audit {spec['name']}")
    return result if isinstance(result, str) else json.loads(result.stdout[result.stdout.index("{") :])


def advice(
    folder: Path, spec: dict[str, Any], executors: list[str], measured: dict[str, Any] | str
) -> dict[str, Any] | str:
    """The advisor's probe of the same spec, its prediction beside the bench's measurement (bench/advisor.py's
    table), or why it could not run."""
    if isinstance(measured, str):
        return f"no bench to compare with: {measured}"
    path, out = folder / f"{spec['name']}.json", folder / f"{spec['name']}-probe"
    command = trainer_command(spec["resources"]["devices"], "probe", "--spec", str(path), "--output-dir", str(out))
    result = launch([*command, "--executors", ",".join(executors)], f"probe {spec['name']}")
    if isinstance(result, str):
        return result
    report = ProbeReport.model_validate_json((out / "probe.json").read_text())
    return compared(path, report, measured)


def accepted(spec: dict[str, Any], name: str) -> bool:
    """Whether the spec validates with this executor (FSDP takes only some)."""
    try:
        parse_spec({**spec, "executor": {"name": name}})
    except ValueError:
        return False
    return True


def placements(folder: Path, model: Path, device: str, small: bool) -> str:
    """Part 3's table: each executor's step memory by component (MiB) under each placement of the frozen parts."""
    lines = [
        "| text encoders | reference | executor | " + " | ".join(COMPONENTS) + " | sum | peak |",
        "|---|---|---|" + "---|" * (len(COMPONENTS) + 2),
    ]
    for encoders, reference in PLACEMENTS:
        spec = job(model, device, small, text_encoders=encoders, reference=reference)
        spec["name"] = f"{spec['name']}-{encoders}-{reference}"
        spec["algorithm"]["kl_beta"] = AUDITED["kl_beta"]
        report = bench(folder, spec, PLACED_EXECUTORS, 1)
        if isinstance(report, str):
            lines.append(f"| {encoders} | {reference} | {report} |")
            continue
        for name, result in report["executors"].items():
            parts = [result["memory"][c] / 2**20 for c in COMPONENTS]
            peak = (result["start_bytes"] + result["peak_bytes"]) / 2**20
            cells = " | ".join(f"{v:.2f}" for v in parts)
            lines.append(f"| {encoders} | {reference} | {name} | {cells} | {sum(parts):.2f} | {peak:.2f} |")
    return "\n".join(lines)


def run(small: bool) -> tuple[str, bool]:
    """The report, and whether every configuration ran."""
    import torch

    device = "cpu" if small else "cuda"
    if not small and not torch.cuda.is_available():
        raise SystemExit("gpu-check needs CUDA; --small runs it on the CPU at a reduced size")
    gpus = torch.cuda.device_count() if device == "cuda" else 0
    size, rounds = (SMALL, 1) if small else (SATURATING, 3)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        model = build_sized_sd3(folder / "model", size)
        single = job(model, device, small)
        reports = [bench(folder, single, ONE_RANK, rounds)]
        advised = advice(folder, single, ONE_RANK, reports[0])
        precisions = ["bf16"] if small else ["bf16", "fp32"]
        audits = {f"1 rank, {p}": audit(folder, single, ONE_RANK, p) for p in precisions}
        if gpus >= 2:
            fsdp = job(model, device, small, ranks=2, sharding="fsdp")
            sharded = [n for n in ONE_RANK if accepted(fsdp, n)]
            reports.append(bench(folder, fsdp, sharded, rounds))
            audits |= {f"2 ranks, FSDP, {p}": audit(folder, fsdp, sharded, p) for p in precisions}
            reports.append(bench(folder, job(model, device, small, ranks=2), ["native", "digenrl"], rounds))
        placed = None if small else placements(folder, model, device, small)
    ran = all(isinstance(r, dict) for r in [*reports, *audits.values()]) and isinstance(advised, dict)
    return text(reports, advised, audits, size, torch.cuda.get_device_name(0) if gpus else "CPU", placed), ran


def run_placements(small: bool) -> str:
    """Part 3 alone (``--placements``)."""
    import torch

    device = "cpu" if small else "cuda"
    if not small and not torch.cuda.is_available():
        raise SystemExit("gpu-check needs CUDA; --small runs it on the CPU at a reduced size")
    size = SMALL if small else SATURATING
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        table = placements(folder, build_sized_sd3(folder / "model", size), device, small)
    return f"{placements_heading(size)}\n\n{table}\n"


def placements_heading(size: SD3Size) -> str:
    return (
        f"## Memory by component, the frozen parts on and off the device\n\nOne rank, SD3-shaped hidden {size.hidden}, "
        f"{size.blocks} block(s), bf16, full fine-tuning, the bench's spec with kl_beta {AUDITED['kl_beta']}; MiB, "
        "peak = start + the step's rise (trainer/step_memory.py)."
    )


def text(
    reports: list[dict[str, Any] | str],
    advised: dict[str, Any] | str,
    audits: dict[str, Any],
    size: SD3Size,
    device: str,
    placed: str | None = None,
) -> str:
    done = [r for r in reports if isinstance(r, dict)]
    failed = "".join(f"- {r}\n" for r in reports if isinstance(r, str))
    batching = "".join(
        f"A forward of a batch of {r['samples'] // r['world_size']} costs {r['batching']:.2f} x that many forwards "
        f"of one sample ({r['world_size']} rank(s)).\n"
        for r in done[:1]
    )
    audit_text = "\n\n".join(f"{label}:\n\n```json\n{json.dumps(a, indent=2)}\n```" for label, a in audits.items())
    return (
        f"# GPU check (make gpu-check)\n\nDevice: {device}. Model: SD3-shaped, hidden {size.hidden}, "
        f"{size.blocks} blocks, {size.image_tokens} image tokens, random weights, bf16, full fine-tuning.\n"
        + batching
        + "\n"
        + markdown(done)
        + ("\n\nFailed:\n\n" + failed if failed else "")
        + "\n\n## The advisor's prediction against the one-rank bench (make bench-advisor's table)\n\n"
        + (advisor_markdown([combined([advised])]) if isinstance(advised, dict) else f"Not run: {advised}")
        + "\n\n## Gradient audit (deterministic kernels; bf16 by the bf16 class, fp32 by the exactness classes)\n\n"
        + f"The audit's step: the bench's spec with {json.dumps(AUDITED)}, executor {json.dumps(AUDIT_EXECUTOR)}.\n\n"
        + audit_text
        + "\n"
        + ("" if placed is None else f"\n{placements_heading(size)}\n\n{placed}\n")
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/gpu_check.py")
    parser.add_argument("--small", action="store_true", help="the CPU at a reduced size (the suite's check)")
    parser.add_argument("--output", type=Path, help="write the report here (default on CUDA: bench/results/gpu.md)")
    parser.add_argument("--placements", action="store_true", help="only the memory table of the frozen parts' places")
    args = parser.parse_args()
    if args.placements:
        table = run_placements(args.small)
        if args.output is not None:
            args.output.write_text(table)
        print(table)
        return 0
    report, ran = run(args.small)
    output = args.output or (None if args.small else RESULTS / "gpu.md")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(report)
    print(report)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
