"""``python -m trainer run --spec FILE --output-dir DIR [--resume]`` (and ``audit``, ``bench``, ``probe``, ``export``,
``task``).

Exit status 0 means the job succeeded; 2 means the spec cannot run (the message names the field); 75 means a part
of the platform stayed unreachable for the whole outage window (trainer/spec/exit_codes.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from trainer.platform_outage import PlatformOutage
from trainer.spec import SpecError, spec_errors
from trainer.spec.exit_codes import PLATFORM_OUTAGE_EXIT_CODE, PLATFORM_OUTAGE_PREFIX, SPEC_ERROR_EXIT_CODE

PROBE_FILE = "probe.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer")
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="train one job")
    run_parser.add_argument("--spec", type=Path, required=True)
    run_parser.add_argument("--output-dir", type=Path, required=True)
    run_parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    audit_parser = commands.add_parser("audit", help="compare executors' gradients with native's on one trajectory")
    audit_parser.add_argument("--spec", type=Path, required=True)
    audit_parser.add_argument("--executors", required=True, help="comma-separated, e.g. native,lean_retain")
    bench_parser = commands.add_parser("bench", help="time executors interleaved in one run, against their bounds")
    bench_parser.add_argument("--spec", type=Path, required=True)
    bench_parser.add_argument("--executors", required=True, help="comma-separated; native is always included")
    bench_parser.add_argument("--rounds", type=int, default=3, help="timed A B A B rounds after the warm-up")
    bench_parser.add_argument("--warmup", type=int, default=1)
    bench_parser.add_argument("--json", type=Path, help="also write the report here")
    probe_parser = commands.add_parser("probe", help="measure every executor at reduced sizes for the advisor")
    probe_parser.add_argument("--spec", type=Path, required=True)
    probe_parser.add_argument("--output-dir", type=Path, required=True, help="probe.json is written here")
    probe_parser.add_argument("--executors", help="comma-separated (default: every executor)")
    export_parser = commands.add_parser("export", help="write a checkpoint as diffusers, comfyui or merged")
    export_parser.add_argument("--spec", type=Path, required=True, help="the job's spec")
    export_parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoints/step-N or model/")
    export_parser.add_argument("--format", required=True, help="diffusers, comfyui or merged")
    export_parser.add_argument("--out", type=Path, required=True)
    task_parser = commands.add_parser("task", help="run a task job on a checkpoint (an export, an evaluation, ...)")
    task_parser.add_argument("--spec", type=Path, required=True, help="the source job's spec")
    task_parser.add_argument("--output-dir", type=Path, required=True)
    task_parser.add_argument("--task", type=Path, required=True, help="the task (trainer.spec.task)")
    args = parser.parse_args(argv)

    try:
        if args.command == "audit":
            return audit_command(args.spec, args.executors.split(","))
        if args.command == "bench":
            return bench_command(args.spec, args.executors.split(","), args.rounds, args.warmup, args.json)
        if args.command == "probe":
            names = [n.strip() for n in args.executors.split(",") if n.strip()] if args.executors else None
            return probe_command(args.spec, args.output_dir, names)
        if args.command == "export":
            return export_command(args.spec, args.checkpoint, args.format, args.out)
        if args.command == "task":
            from trainer.tasks.dispatch import run_task

            run_task(args.spec, args.task, args.output_dir)
            return 0
        from trainer.run import run

        run(args.spec, args.output_dir, args.resume)
    except SpecError as exc:  # found by the trainer itself (a reward model that does not load, a video size)
        print(f"spec error: {exc.field}: {exc.message}", file=sys.stderr)
        return SPEC_ERROR_EXIT_CODE
    except ValidationError as exc:
        for error in spec_errors(exc):
            print(f"spec error: {error['field']}: {error['message']}", file=sys.stderr)
        return SPEC_ERROR_EXIT_CODE
    except PlatformOutage as exc:
        print(f"{PLATFORM_OUTAGE_PREFIX}{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return PLATFORM_OUTAGE_EXIT_CODE
    return 0


def audit_command(spec: Path, executors: list[str]) -> int:
    """Print the audit JSON (rank 0); exit 1 when an exact executor misses its threshold."""
    import json
    import os

    from trainer.audit import audit

    report = audit(spec, [name.strip() for name in executors if name.strip()])
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(report, indent=2))
    return 1 if any(r["verdict"] == "fail" for r in report["executors"].values()) else 0


def bench_command(spec: Path, executors: list[str], rounds: int, warmup: int, output: Path | None) -> int:
    """Print the Markdown table (rank 0), and write the JSON report when asked."""
    import json
    import os

    # The peak-memory step runs under torch.profiler. Its kineto library logs a "USDT: ... profiler_start" and
    # a "profiler_stop" line to stderr per profile, at a severity (5) above ERROR: only level 6 keeps them off
    # the table. c10's CPU allocator warns once that a block freed during the profile was allocated before it
    # (the profile cannot see that free): expected for a training step. Both levels are read once, when torch
    # loads, which it has not yet here.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    from trainer.bench import bench, markdown, memory_markdown

    report = bench(spec, [name.strip() for name in executors if name.strip()], rounds, warmup)
    if os.environ.get("RANK", "0") == "0":
        print(markdown([report]))
        print("\n" + memory_markdown([report]))
        if output is not None:
            output.write_text(json.dumps(report, indent=2))
    return 0


def probe_command(spec: Path, output_dir: Path, executors: list[str] | None) -> int:
    """Write probe.json (rank 0) and send it through the ingest door when run as a platform job."""
    import os

    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # as for bench: the CPU peak is read under the profiler
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    from trainer.probe.measure import probe
    from trainer.reporting.reporter import Reporter

    report = probe(spec, executors, output_dir)
    if os.environ.get("RANK", "0") == "0":
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / PROBE_FILE).write_text(report.model_dump_json(indent=2))
        reporter = Reporter.from_environment(output_dir)
        report.attempt = reporter.attempt
        reporter.probe(report)
        reporter.close()
        print(f"probe of {len(report.executors)} executors written to {output_dir / PROBE_FILE}")
    return 0


def export_command(spec: Path, checkpoint: Path, name: str, out: Path) -> int:
    """Write the export; a format the job's family or fine-tune mode lacks is a spec error naming ``format``."""
    from trainer.export.write import export
    from trainer.run import load_spec

    written = export(load_spec(spec), checkpoint, name, out)
    print(f"{name} export written to {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
