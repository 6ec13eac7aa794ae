"""``make bench-audit``: the executors' audit over every model family x algorithm x executor, on tiny models.

For every family of ``model.family`` (trainer/spec/model.py) on its tiny model (``builtin:tiny``, else
``build_tiny_<family>`` of trainer/models/tiny_<family>.py, an image family with a small edit set as its prompts;
and the tiny SD3.5-Medium and Wan 2.2 TI2V-5B checkpoints the family tests build), every algorithm of the
trainer's registry and every executor, it runs the audit of trainer/audit.py (docs/executors.md §4) on the spec of
tests/executors/test_family_audit.py: full fine-tuning, T = 4, 2 prompts x 2 samples, one step, fp32, one
process on the CPU, with jagg's routing at ``group_width`` 3 (``JAGG_WIDTHS``) and MixGRPO's window at 2
(``ALGORITHM_FIT``). One audit per family and algorithm judges every executor that accepts the spec against one
native step; digenrl, which needs a rollout and a trainer device, is audited apart on two gloo ranks under
torchrun (``--no-digenrl`` skips it).

A combination that cannot run is listed with the refusal and its field, as the platform gives it: the spec's
(a family/algorithm pair no upstream recipe trains: trainer/spec/family_algorithms.py), the audit's (a
forward-process algorithm has no trajectory to replay), or the executor's (``options_for`` in
trainer/spec/executor_choice.py). An audit that raises is a finding: its error is listed.

It writes ``bench/results/family-audit.md`` after every audit (a cut-short run keeps what it finished) and the
outcomes and reports to ``bench/results/family-audit.json``; ``--cases kontext,wan_i2v`` (or ``--algorithms``)
re-runs those combinations and keeps the others' rows from that file. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, get_args

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# One thread: on a CPU shared with other jobs, two OpenMP threads per op ran 20 times slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from trainer.algorithms.registry import ALGORITHM_CLASSES  # noqa: E402
from trainer.spec import BUILTIN_FAMILIES, JobSpec, SpecError, parse_spec  # noqa: E402
from trainer.spec.executor import EXECUTORS  # noqa: E402
from trainer.spec.executor_choice import options_for  # noqa: E402
from trainer.spec.job import spec_errors  # noqa: E402
from trainer.spec.model import IMAGE_FAMILIES, ModelSpec  # noqa: E402

RESULTS = REPO / "bench" / "results"
REPORT = RESULTS / "family-audit.md"
REPORTS_JSON = RESULTS / "family-audit.json"
TWO_RANKS = ("digenrl",)
# jagg's group widths tried in turn: 3 routes one interpolated step per group at T = 4 (its default, 4, is more
# than the 3 steps Flow-GRPO trains there); 2 (no interior step) where fewer steps train.
JAGG_WIDTHS = (3, 2)  # a rollout pool and a trainer pool: two devices at the least
# Algorithm fields the audit's T = 4 needs: MixGRPO's window (its released scripts' 4) is at most T - 2 steps.
ALGORITHM_FIT: dict[str, dict[str, Any]] = {"mix_grpo": {"window_size": 2}, "mix_grpo_flash": {"window_size": 2}}
EDIT_ROWS = [("make the ball red", "blue.png", (26, 51, 230)), ("paint the sky orange", "sky.png", (102, 153, 255))]
AUDIT_SPEC: dict[str, Any] = {
    "model": {"finetune": "full", "lora_rank": None},
    "algorithm": {"sampling_steps": 4, "total_steps": 1, "prompts_per_step": 2, "group_size": 2},
    "samples": {"count": 0},
    "checkpoint": {"every": 0},
}


@dataclass
class Outcome:
    """One family x algorithm x executor: its audit figures, or why it did not run."""

    case: str
    algorithm: str
    executor: str
    verdict: str  # pass / report / warn / fail, "refused" or "error"
    figures: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    seconds: float = 0.0


def families() -> tuple[str, ...]:
    """Every family a spec may name (the model section's ``family`` literal)."""
    return get_args(ModelSpec.model_fields["family"].annotation)


def model_cases(root: Path) -> dict[str, dict[str, Any] | str]:
    """Each case's model section (with its prompts source where the family edits an image), or why the bench has
    no tiny model of the family: ``builtin:tiny``, else ``build_tiny_<family>`` of trainer/models/tiny_<family>.py
    (its ``TINY_SIZE`` the resolution, and frames); then the SD3.5-Medium and Wan 2.2 checkpoints."""
    from trainer.models.tiny_sd35 import build_tiny_sd35
    from trainer.models.tiny_wan22 import TINY_SIZE, build_tiny_wan22

    cases: dict[str, dict[str, Any] | str] = {}
    for family in families():
        if family in BUILTIN_FAMILIES:
            cases[f"{family} (builtin:tiny)"] = {"model": {"family": family, "path": "builtin:tiny"}}
            continue
        try:
            module = importlib.import_module(f"trainer.models.tiny_{family}")
            build = getattr(module, f"build_tiny_{family}")
        except (ImportError, AttributeError):
            cases[family] = f"no builtin:tiny and no trainer/models/tiny_{family}.py with build_tiny_{family}"
            continue
        model: dict[str, Any] = {"family": family, "path": str(build(root / family))}
        size = getattr(module, "TINY_SIZE", None)
        if size is not None:
            model["resolution"] = list(size[:2])
            if len(size) == 3:
                model["num_frames"] = size[2]
        case: dict[str, Any] = {"model": model}
        if family in IMAGE_FAMILIES:
            case["prompts"] = {"source": str(write_edit_set(root / "edit-set"))}
        cases[f"{family} (tiny)"] = case
    height, width, frames = TINY_SIZE
    cases["sd3 (SD3.5-Medium)"] = {"model": {"family": "sd3", "path": str(build_tiny_sd35(root / "sd35", "medium"))}}
    wan22 = {"family": "wan", "path": str(build_tiny_wan22(root / "wan22")), "resolution": [height, width]}
    cases["wan (Wan 2.2 TI2V-5B)"] = {"model": wan22 | {"num_frames": frames}}
    return cases


def write_edit_set(folder: Path, size: int = 32) -> Path:
    """An edit set for the families that edit an image: ``train.jsonl`` rows of an instruction and its image (a
    disc of a colour on grey), the images beside it."""
    from PIL import Image, ImageDraw

    (folder / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for prompt, name, colour in EDIT_ROWS:
        picture = Image.new("RGB", (size, size), (128, 128, 128))
        ImageDraw.Draw(picture).ellipse((size // 4, size // 4, 3 * size // 4, 3 * size // 4), fill=colour)
        picture.save(folder / "images" / name)
        lines.append(json.dumps({"prompt": prompt, "image": f"images/{name}"}))
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def spec_dict(case: dict[str, Any], algorithm: str, **sections: dict[str, Any]) -> dict[str, Any]:
    """examples/tiny-native.json with the audit's sections, the case's model (and prompts) and the algorithm."""
    spec = json.loads((REPO / "examples" / "tiny-native.json").read_text())
    own = {**case, "algorithm": {"name": algorithm, **ALGORITHM_FIT.get(algorithm, {})}, **sections}
    for key in {*AUDIT_SPEC, *own}:
        spec[key] = {**spec.get(key, {}), **AUDIT_SPEC.get(key, {}), **own.get(key, {})}
    if algorithm != "flow_grpo":  # tiny-native's noise level and clip range are Flow-GRPO's
        for key in ("noise_level", "clip_range"):
            spec["algorithm"].pop(key, None)
    return spec


def routed_spec(sections: dict[str, Any], algorithm: str, work: Path) -> tuple[dict[str, Any], JobSpec]:
    """The audited spec, naming jagg with the widest of JAGG_WIDTHS that fits the algorithm's trained steps (so
    jagg and its compositions share that routing and have an interpolated step to judge), else native's."""
    for width in JAGG_WIDTHS:
        data = spec_dict(sections, algorithm, executor={"name": "jagg", "group_width": width})
        try:
            return data, parse_spec(data, base_dir=str(work))
        except Exception:
            continue
    data = spec_dict(sections, algorithm)
    return data, parse_spec(data, base_dir=str(work))


def refusal(exc: Exception) -> str:
    if isinstance(exc, SpecError):
        return f"{exc.field}: {exc.message}"
    return "; ".join(f"{e['field']}: {e['message']}" for e in spec_errors(exc))


def audit_one_rank(path: Path, names: list[str]) -> dict[str, Any]:
    from trainer.audit import audit

    return audit(path, names)


def audit_two_ranks(path: Path, names: list[str], home: Path) -> dict[str, Any]:
    """``torchrun --nproc-per-node 2 -m trainer audit``: rank 0's JSON, or the tail of its output as the error."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += ["-m", "trainer", "audit", "--spec", str(path), "--executors", ",".join(names)]
    env = {**os.environ, "SFUMATO_HOME": str(home)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    out = done.stdout
    if "{" not in out:
        raise RuntimeError(f"exit {done.returncode}: {(done.stderr or out)[-1500:]}")
    return json.loads(out[out.index("{") : out.rindex("}") + 1])


def figures_of(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("class", "rel_l2", "bound", "cosine", "grad_norm", "native_grad_norm", "updates_taken", "worst")
    figures = {key: result.get(key) for key in keys}
    against = next((value for key, value in result.items() if key.startswith("against_")), None)
    if against is not None:  # a composed executor against the executor whose estimator it is
        figures["against"] = f"{against['verdict']} ({against['rel_l2']:.2g})"
    return figures


def run_audit(
    case: str, algorithm: str, names: list[str], path: Path, home: Path, two_ranks: bool
) -> tuple[list[Outcome], dict[str, Any] | None]:
    """The outcomes of one audit of ``names`` (with native); a raising audit is retried one executor at a time,
    so the one that raises is named."""
    started = time.perf_counter()
    try:
        report = audit_two_ranks(path, names, home) if two_ranks else audit_one_rank(path, names)
    except Exception as exc:  # a finding: reported with its error, not hidden
        if len(names) > 1:
            outcomes, reports = [], []
            for name in names:
                one, report = run_audit(case, algorithm, [name], path, home, two_ranks)
                outcomes += one
                reports.append(report)
            return outcomes, {"per_executor": reports}
        message = f"{type(exc).__name__}: {exc}".strip()
        detail = traceback.format_exc(limit=3) if not two_ranks else ""
        seconds = time.perf_counter() - started
        return [Outcome(case, algorithm, names[0], "error", reason=message, seconds=seconds)], {"error": detail}
    seconds = time.perf_counter() - started
    executors = report["executors"]
    outcomes = [
        Outcome(case, algorithm, name, executors[name]["verdict"], figures_of(executors[name]), seconds=seconds)
        for name in names
    ]
    return outcomes, report


def audit_case(
    case: str, sections: dict[str, Any], algorithm: str, work: Path, home: Path, digenrl: bool
) -> tuple[list[Outcome], list[dict[str, Any]]]:
    """Every executor on one family and algorithm: refused, or audited against native."""
    try:
        one_rank, spec = routed_spec(sections, algorithm, work)
    except Exception as exc:
        return [Outcome(case, algorithm, "every executor", "refused", reason=refusal(exc))], []
    if spec.algorithm.family == "forward":
        reason = (
            "algorithm.name: the audit replays one rollout trajectory; a forward-process algorithm trains on "
            "re-noised clean samples under native alone (trainer/audit.py)"
        )
        return [Outcome(case, algorithm, "every executor", "refused", reason=reason)], []
    outcomes: list[Outcome] = []
    accepted = []
    for name in EXECUTORS:
        if name == "native" or name in TWO_RANKS:
            continue
        try:
            options_for(spec, name)
            accepted.append(name)
        except SpecError as exc:
            outcomes.append(Outcome(case, algorithm, name, "refused", reason=refusal(exc)))
    reports = []
    path = work / f"{slug(case)}-{algorithm}.json"
    path.write_text(json.dumps(one_rank))
    if accepted:
        audited, report = run_audit(case, algorithm, accepted, path, home, two_ranks=False)
        outcomes += audited
        reports.append({"case": case, "algorithm": algorithm, "executors": accepted, "report": report})
    for name in TWO_RANKS if digenrl else ():
        two = spec_dict(sections, algorithm, resources={"devices": 2}, executor={"name": name})
        try:
            parse_spec(two, base_dir=str(work))
        except Exception as exc:
            outcomes.append(Outcome(case, algorithm, name, "refused", reason=refusal(exc)))
            continue
        two_path = work / f"{slug(case)}-{algorithm}-{name}.json"
        two_path.write_text(json.dumps(two))
        audited, report = run_audit(case, algorithm, [name], two_path, home, two_ranks=True)
        outcomes += audited
        reports.append({"case": case, "algorithm": algorithm, "executors": [name], "ranks": 2, "report": report})
    return outcomes, reports


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-")


def number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def markdown(outcomes: list[Outcome], command: str, seconds: float, missing: dict[str, str], kept: int) -> str:
    cases = list(dict.fromkeys(o.case for o in outcomes))
    order = list(ALGORITHM_CLASSES)
    outcomes = sorted(outcomes, key=lambda o: (cases.index(o.case), order.index(o.algorithm)))  # stable: executors
    audited = [o for o in outcomes if o.verdict not in ("refused", "error")]
    refused = [o for o in outcomes if o.verdict == "refused"]
    errors = [o for o in outcomes if o.verdict == "error"]
    counts: dict[str, int] = {}
    for outcome in audited:
        counts[outcome.verdict] = counts.get(outcome.verdict, 0) + 1
    lines = [
        "# The executors' audit over every family x algorithm x executor",
        "",
        f"Command: `{command}` (bench/family_audit.py), {seconds / 60:.1f} min on this host's CPU, one thread"
        + (f"; {kept} rows of other combinations kept from the run before (family-audit.json)." if kept else "."),
        "Each family's tiny model; the spec of tests/executors/test_family_audit.py (full fine-tuning, T = 4, "
        "2 prompts x 2 samples, one step, fp32); every executor's first-update gradient against native's on one "
        "replayed trajectory (trainer/audit.py, docs/executors.md §4). E0: bitwise equal to native; E1: relative "
        "L2 within its bound (3 x native's own micro-batch floor, at least 1e-5); class A is reported, and "
        "jagg_retain and jagg_reweight are also judged against jagg, whose estimator they compose (vs jagg). "
        "digenrl runs on two gloo ranks (a rollout and a trainer device).",
        "",
        f"Audited combinations: {len(audited)} ({', '.join(f'{n} {v}' for v, n in sorted(counts.items()))}); "
        f"refused: {len(refused)}; errors: {len(errors)}.",
        "",
        "## Audited",
        "",
        "| family (model) | algorithm | executor | class | rel L2 | bound | cosine | grad norm | vs jagg | verdict "
        "| audit s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in audited:
        f = o.figures
        lines.append(
            f"| {o.case} | `{o.algorithm}` | `{o.executor}` | {f.get('class')} | {number(f.get('rel_l2'))} | "
            f"{number(f.get('bound'))} | {number(f.get('cosine'))} | {number(f.get('grad_norm'))} | "
            f"{f.get('against', '—')} | "
            f"**{o.verdict}** | {o.seconds:.0f} |"
        )
    if errors:
        lines += [
            "",
            "## Errors (findings)",
            "",
            "| family (model) | algorithm | executor | error |",
            "|---|---|---|---|",
        ]
        lines += [f"| {o.case} | `{o.algorithm}` | `{o.executor}` | {cell(o.reason)} |" for o in errors]
    lines += ["", "## Refused", "", "| family (model) | algorithm | executor | refusal |", "|---|---|---|---|"]
    lines += [f"| {o.case} | `{o.algorithm}` | `{o.executor}` | {cell(o.reason)} |" for o in refused]
    if missing:
        lines += ["", "## Families without a tiny model here", ""]
        lines += [f"- `{family}`: {reason}" for family, reason in missing.items()]
    return "\n".join(lines) + "\n"


def cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())[:600]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated substrings of the cases to run (default: every case)")
    parser.add_argument("--algorithms", help="comma-separated algorithm names (default: every algorithm)")
    parser.add_argument("--no-digenrl", action="store_true", help="skip the two-rank digenrl audits")
    args = parser.parse_args()
    wanted = args.cases.split(",") if args.cases else None
    algorithms = args.algorithms.split(",") if args.algorithms else list(ALGORITHM_CLASSES)
    command = "python bench/family_audit.py " + " ".join(sys.argv[1:])
    started = time.perf_counter()
    outcomes, reports = kept_from_before(wanted, args.algorithms.split(",") if args.algorithms else None)
    kept = len(outcomes)
    with tempfile.TemporaryDirectory(prefix="family-audit-") as scratch:
        work, home = Path(scratch), Path(scratch) / "home"
        os.environ["SFUMATO_HOME"] = str(home)
        cases = model_cases(work)
        missing = {case: reason for case, reason in cases.items() if isinstance(reason, str)}
        for case, sections in cases.items():
            if isinstance(sections, str) or not chosen(case, wanted):
                continue
            for algorithm in algorithms:
                done, reported = audit_case(case, sections, algorithm, work, home, not args.no_digenrl)
                outcomes += done
                reports += reported
                for o in done:
                    print(f"{o.case:26} {o.algorithm:15} {o.executor:15} {o.verdict:8} {o.reason[:100]}", flush=True)
                RESULTS.mkdir(parents=True, exist_ok=True)
                seconds = time.perf_counter() - started
                REPORT.write_text(markdown(outcomes, command.strip(), seconds, missing, kept))
                saved = {"outcomes": [asdict(o) for o in outcomes], "reports": reports}
                REPORTS_JSON.write_text(json.dumps(saved, indent=1, default=str))


def chosen(case: str, wanted: list[str] | None) -> bool:
    return wanted is None or any(w in case for w in wanted)


def kept_from_before(
    wanted: list[str] | None, algorithms: list[str] | None
) -> tuple[list[Outcome], list[dict[str, Any]]]:
    """With ``--cases`` or ``--algorithms``, the last run's outcomes and reports of the other combinations (so a
    re-run of some keeps the table whole); without, nothing."""
    if (wanted is None and algorithms is None) or not REPORTS_JSON.exists():
        return [], []

    def rerun(entry: dict[str, Any]) -> bool:
        return chosen(entry["case"], wanted) and (algorithms is None or entry["algorithm"] in algorithms)

    saved = json.loads(REPORTS_JSON.read_text())
    outcomes = [Outcome(**o) for o in saved.get("outcomes", []) if not rerun(o)]
    reports = [r for r in saved.get("reports", []) if not rerun(r)]
    return outcomes, reports


if __name__ == "__main__":
    main()
