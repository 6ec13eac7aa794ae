"""``make mutation``: mutation testing (mutmut) of the modules that decide correctness and access.

Each module is mutated by mutmut in a scratch copy of the repository (so the checkout never holds a mutated file),
with the tests that speak for that module; mutmut runs, for each mutant, only the selected tests that reach the
mutated function. Writes bench/results/mutation.md: per module the mutants, killed, timed out and survived (a
mutant that no selected test reaches survives), and every survivor with its diff and, where the survivor cannot
change behaviour, why (EQUIVALENT below).

    python bench/mutation.py                      # every module
    python bench/mutation.py --only trainer/loss.py --only trainer/advantages.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))

from bench.mutation_model_cache import CACHE_ENV  # noqa: E402

# The modules the target covers, each with the tests that state its behaviour.
MODULES: dict[str, list[str]] = {
    "trainer/loss.py": ["tests/trainer/test_loss_against_formula.py", "tests/trainer/test_kl_form.py"],
    "trainer/advantages.py": ["tests/trainer/test_advantages.py", "tests/trainer/test_advantages_against_formula.py"],
    "trainer/audit.py": [
        "tests/executors/test_audit.py",
        "tests/executors/test_audit_nan_verdict.py",
        "tests/executors/test_audit_refusals.py",
        "tests/executors/test_jagg_composed_audit.py",  # same_estimator: a composed executor against jagg
        "tests/executors/test_audit_mutations.py",  # a term's failed verdict where the whole loss passes
        "tests/executors/test_audit_verdict_rules.py",  # verdict, worst, floor_bound, floor_split, worst_entry alone
        "tests/executors/test_audit_bf16_class.py",  # the bf16 class: its floor, bounds and refusal
        "tests/executors/test_audit_figures.py",  # gradient_figures and compare on hand-made tensors
        "tests/executors/test_audit_ratio_distance.py",  # a capture's ratio distance where it is not 0
    ],
    # Each executor module with single-process tests of its behaviour (the torchrun tests would take minutes a mutant).
    "trainer/executors/lean_reweight.py": [
        "tests/executors/test_reweight_order.py",
        "tests/executors/test_reweight_adv_clip.py",
        "tests/executors/test_hybrid_schedule.py",
        "tests/executors/test_reweight_group_std.py",
        "tests/executors/test_meta_device_step.py",  # the steps without a KL (DanceGRPO, Flash-GRPO)
        "tests/executors/test_reweight_join_pieces.py",
    ],
    "trainer/executors/gradient_cosine.py": [
        "tests/executors/test_gradient_cosine.py",
        "tests/executors/test_audit_nan_verdict.py",
    ],
    "trainer/executors/gradient_buffers.py": [
        "tests/executors/test_gradient_buffers.py",
        "tests/executors/test_reweight_order.py",
        "tests/executors/test_reweight_group_std.py",
    ],
    "trainer/executors/base.py": ["tests/executors/test_executor_base.py"],
    "trainer/executors/native.py": [
        "tests/executors/test_hybrid_schedule.py",
        "tests/executors/test_native_step.py",
        "tests/executors/test_native_sampling_weights.py",  # a forward algorithm's old policy (DGPO)
    ],
    "trainer/executors/recompute.py": [
        "tests/executors/test_hybrid_schedule.py",
        "tests/executors/test_native_step.py",
    ],
    "trainer/executors/lean_retain.py": [
        "tests/executors/test_lean_retain_step.py",  # its own timings and executor metrics
        "tests/executors/test_jagg_composed_spec.py",  # jagg_retain's graph mask reaches the rollout (graphs kept)
        "tests/executors/test_meta_device_step.py",  # an index built off the job's device mixes devices
        "tests/executors/test_retained_graph_budget.py",  # the memory budget's fallback and failure
        "tests/executors/test_native_step.py",
        "tests/executors/test_retain_backward_rows.py",
        "tests/executors/test_hybrid_schedule.py",
        "tests/executors/test_training.py",
        "tests/executors/test_audit.py",
    ],
    "trainer/executors/jagg.py": [
        "tests/executors/test_audit.py",
        "tests/executors/test_jagg_against_native.py",
        "tests/executors/test_jagg_probes.py",
        "tests/executors/test_jagg_composed_audit.py",  # the composed executors held to jagg's gradient
        "tests/executors/test_jagg_step.py",  # its timings and executor metrics
    ],
    # The composed executors: held to jagg's gradient by the audit (against_jagg), on one rank and two.
    "trainer/executors/jagg_groups.py": [
        "tests/executors/test_jagg_groups.py",
        "tests/executors/test_jagg_velocity_terms.py",
        "tests/executors/test_jagg_against_native.py",
        "tests/executors/test_jagg_composed_audit.py",
    ],
    "trainer/executors/jagg_retain.py": [
        "tests/executors/test_jagg_composed_audit.py",
        "tests/executors/test_jagg_composed_spec.py",
        "tests/executors/test_meta_device_step.py",  # a whole step of it, with and without a KL
        "tests/executors/test_jagg_retain_velocity.py",  # rollout_velocity, one row per rank included
    ],
    "trainer/executors/jagg_reweight.py": [
        "tests/executors/test_jagg_composed_audit.py",
        "tests/executors/test_jagg_composed_spec.py",
        "tests/executors/test_meta_device_step.py",  # a whole step of it, with and without a KL
        "tests/executors/test_audit_mutations.py",  # its KL term judged apart from the whole loss
    ],
    "trainer/executors/graph_rollout.py": [
        "tests/executors/test_graph_rollout.py",  # without a replay: the job's own rollout
        "tests/executors/test_native_step.py",
        "tests/executors/test_retain_backward_rows.py",
        "tests/executors/test_reweight_group_std.py",
        "tests/executors/test_meta_device_step.py",  # a row index built off the job's device mixes devices
    ],
    "trainer/executors/step_report.py": [
        "tests/executors/test_native_step.py",
        "tests/executors/test_reweight_group_std.py",
        "tests/executors/test_hybrid_schedule.py",
    ],
    "trainer/executors/registry.py": ["tests/executors/test_executor_base.py", "tests/executors/test_spec_refusals.py"],
    # digenrl needs a generator and a trainer rank for a whole step (its torchrun tests are slow): one process reaches
    # its pools' layout, its generation, its step result and its replay.
    "trainer/executors/digenrl.py": [
        "tests/executors/test_digenrl_layout.py",
        "tests/executors/test_meta_device_step.py",
    ],
    "trainer/executors/tsp_replay.py": [
        "tests/executors/test_tsp_replay.py",  # every unit replayed forms native's gradient, at two batch widths
        "tests/executors/test_meta_device_step.py",
    ],
    "trainer/executors/units.py": ["tests/executors/test_digenrl_units.py", "tests/executors/test_meta_device_step.py"],
    "server/services/scoping.py": [
        "tests/security/test_route_table_cross_team.py",
        "tests/security/test_cross_team.py",
        "tests/security/test_role_walkthrough.py",
        "tests/security/test_offboarding.py",
        "tests/server/test_job_cancel_retry.py",
        "tests/server/scheduling/test_host_admin.py",
        "tests/server/test_role_refusals.py",
    ],
    # The tests that judge auth.py's own answers (token and page-session callers, passwords, the first start); the
    # token, setup-link and session-page tests reach it on every request but judge other services, and
    # test_password_setup_link starts a server process, which a loaded machine does not start in its time limit.
    "server/services/auth.py": [
        "tests/server/test_auth.py",
        "tests/server/test_caller_checks.py",
        "tests/security/test_first_start_credentials.py",
        "tests/security/test_token_misuse.py",
        "tests/security/test_password_rules.py",
        "tests/security/test_password_credentials.py",
        "tests/security/test_session_credentials.py",
        "tests/server/test_superseded_job_token.py",  # the token of an attempt that is over
        "tests/server/test_job_token_reads.py",  # a job token reading its team's artifacts (running_job_of_token)
    ],
    # The scheduling tests that judge placement (the rest reach place_queued_jobs only to set up a run).
    "server/services/placement_pass.py": [
        "tests/server/scheduling/test_placement_pass_record.py",
        "tests/server/scheduling/test_placement_pass.py",
        "tests/server/scheduling/test_team_quotas.py",
        "tests/server/scheduling/test_exclusive_scheduling.py",
        "tests/server/scheduling/test_pool_scheduling.py",
        "tests/server/scheduling/test_service_scheduling.py",
        "tests/server/scheduling/test_reconcile.py",
        "tests/server/scheduling/test_host_admin.py",
    ],
    "server/services/metric_blocks.py": [
        "tests/server/test_metric_block_packing.py",
        "tests/server/test_ingest_metrics.py",
        "tests/server/test_ingest_key_names.py",
        "tests/server/test_metric_storage.py",
    ],
}

# Survivors that no test can kill because the mutant behaves as the original, keyed by mutmut's mutant name.
_BLOCKS, _PLACEMENT = "server.services.metric_blocks.", "server.services.placement_pass."
_AUTH = "server.services.auth."
_REWEIGHT = "trainer.executors.lean_reweight.xǁLeanReweightExecutorǁ"
_TILE_START = (
    "pack() reads `group` only where consecutive points change it (np.diff != 0): inside a block the tile index "
    "never decreases and two blocks' groups never meet (a tile index is below 16), so this "
)
_FLOATS = "MetricStep's values and wall_time are floats (pydantic), so numpy infers float64 unasked"
_INTS = "a step is an int, so numpy infers int64 unasked (on the 64-bit platforms the server runs on)"
_SAME_JOIN = "SQLAlchemy infers the same ON clause from the one foreign key between the two tables: the same SQL"
_DIGENRL = "trainer.executors.digenrl.xǁDigenrlExecutorǁ"
_LOCAL_PLAN = (
    "digenrl's local Distributed only plans the whole step in one process: no plan reads its rank or local_rank, and "
    "its collectives are no-ops at world_size 1"
)
_POOL_ORDER = "the pools are 'rollout' and 'trainer' (POOLS in server/models/host.py): alphabetical is POOLS' order"
EQUIVALENT: dict[str, str] = {
    _BLOCKS + "x_pack__mutmut_60": _TILE_START + "16 * block - tile changes exactly where 16 * block + tile does",
    _BLOCKS + "x_pack__mutmut_61": _TILE_START + "block / 16 + tile changes exactly where 16 * block + tile does",
    _BLOCKS + "x_pack__mutmut_62": "BLOCK / TILE_STEPS is 16.0, the same number as BLOCK // TILE_STEPS",
    _BLOCKS + "x_pack__mutmut_72": "groups are >= 0: any negative `prepend` starts a tile at the first point",
    _BLOCKS + "x_pack__mutmut_89": "a uint8 field truncates the quotient toward zero: floor division for offsets >= 0",
    _BLOCKS + "x__stored_sqlite__mutmut_7": (
        "without the (key, block) filter the read returns every block of the attempt; store() looks up only the "
        "touched ones, so it merges and writes the same rows (after a larger read)"
    ),
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_26": _FLOATS,
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_28": _FLOATS,
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_32": _INTS,
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_34": _INTS,
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_37": _FLOATS,
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_39": _FLOATS,
    _BLOCKS + "xǁBatchPointsǁof_steps__mutmut_70": "np.concatenate of one array is a copy of it: the same points",
    _PLACEMENT + "x__host_capacity__mutmut_10": _SAME_JOIN,
    _PLACEMENT + "x__host_capacity__mutmut_12": _SAME_JOIN,
    _PLACEMENT + "x__placed_on__mutmut_4": _POOL_ORDER,
    _PLACEMENT + "x__placed_on__mutmut_6": _POOL_ORDER,
    _AUTH + "x__refuse_past_attempt__mutmut_8": _SAME_JOIN,
    _AUTH + "x__refuse_past_attempt__mutmut_10": _SAME_JOIN,
    "trainer.executors.jagg_groups.x_graph_mask__mutmut_11": (
        "position routed·W starts a group (p % W == 0), which the other clause keeps: `>` and `>=` keep the same pairs"
    ),
    "trainer.audit.xǁAuditSessionǁcapture__mutmut_60": (
        "self.weights is a clone of job.parameters taken one for one when the session is built: the zip's lengths "
        "always match"
    ),
    _REWEIGHT + "train_step__mutmut_330": (
        "the first update's clip mask (all False) is only averaged within its own update and read to the host: "
        "its mean is 0 wherever it lives"
    ),
    "trainer.executors.jagg.xǁJaggExecutorǁprobe_cosine__mutmut_50": (
        "torch.autograd.grad returns one gradient (or None) per input it is given: approx and params always have the "
        "same length"
    ),
    "trainer.executors.jagg_retain.xǁJaggRetainExecutorǁbackward_kept__mutmut_60": (
        "the unrouted losses' cotangent is 0-dimensional: autograd moves a 0-dim cotangent to its output's device "
        "(validate_outputs), so device=None backwards the same (the meta-device step passes with it)"
    ),
    "trainer.executors.jagg_reweight.xǁJaggReweightExecutorǁ__init____mutmut_10": (
        "sample_rollout sets first_ends to {} before each sample's rollout, the only place that reads it: the "
        "constructor's value is never read"
    ),
    _DIGENRL + "__init____mutmut_20": _LOCAL_PLAN,
    _DIGENRL + "__init____mutmut_30": _LOCAL_PLAN,
    _DIGENRL + "trainer_step__mutmut_90": (
        "a group's advantages are computed from its units' rewards, one per unit: the zip's lengths always match"
    ),
    "trainer.executors.native.xǁNativeExecutorǁtrain_step__mutmut_18": (
        "native scores the trajectory job.rollout returned, whose rewards the background scorer already holds: "
        "job.score reads the batch only for a trajectory made elsewhere"
    ),
}

# mutmut's exit codes per mutant (mutmut/stats.py status_by_exit_code). A mutant no selected test reaches
# ("no tests") is not killed: it counts as a survivor. A timeout counts as killed, as mutmut counts it.
KILLED = {1, 3}
NO_TESTS = 33  # e.g. a PostgreSQL-only function in a run without SFUMATO_TEST_POSTGRES_URL
SURVIVED = {0, 5, NO_TESTS}
TIMED_OUT = {36, -24, 24, 152, 255}
NOT_CHECKED = {None, 2, 34}
TIMEOUT_CONSTANT, TIMEOUT_MULTIPLIER = 30, 4
# No torchrun test (marked slow) runs for a mutant; the tiny models are built once per run (mutation_model_cache.py).
PYTEST_ARGS = ["-p", "no:cacheprovider", "-p", "bench.mutation_model_cache", "-m", "not slow", "-q"]


@dataclass
class ModuleScore:
    module: str
    tests: list[str]
    seconds: float
    codes: dict[str, int | None] = field(default_factory=dict)

    def count(self, codes: set[int]) -> int:
        return sum(code in codes for code in self.codes.values())

    @property
    def survivors(self) -> list[str]:
        return sorted(name for name, code in self.codes.items() if code in SURVIVED)


def scratch_copy(repo: Path, destination: Path) -> None:
    """The tracked and untracked-but-not-ignored files, as the working tree has them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = repo / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def mutmut_config(module: str, tests: list[str]) -> str:
    """setup.cfg's [mutmut] section: mutate one module, copy the rest of the project beside it, run its tests."""
    rooms = ["web", "worker", "sfumato", "migrations", "alembic.ini", "examples", "bench", "docs"]
    lines = [
        "[mutmut]",
        "source_paths =\n    trainer\n    server",
        f"only_mutate =\n    {module}",
        "also_copy =\n" + "\n".join(f"    {room}" for room in rooms),
        "pytest_add_cli_args_test_selection =\n" + "\n".join(f"    {test}" for test in tests),
        "pytest_add_cli_args =\n" + "\n".join(f"    {arg}" for arg in PYTEST_ARGS),
        # A mutant's wall-clock limit is (its tests' call time + constant) x multiplier. Fixture set-up (a database,
        # a model, an audit's rollout) is not in mutmut's estimate: the constant covers it, so that no mutant is
        # counted killed by a timeout its set-up caused; the multiplier stops a mutant that loops.
        f"timeout_constant = {TIMEOUT_CONSTANT}",
        f"timeout_multiplier = {TIMEOUT_MULTIPLIER}",
        # Mutants fork from a server that has imported the tests but run none: a mutant forked from a process that
        # ran torch (its thread pools, the reward scorer's thread) hangs on a lock no thread of the child holds.
        "process_isolation = forkserver",
    ]
    return "\n".join(lines) + "\n"


def run_module(
    repo: Path, module: str, tests: list[str], workdir: Path, children: int, patterns: list[str] | None = None
) -> ModuleScore:
    """mutmut on one module of `repo` with those of `tests` that `repo` has (an older checkout may lack some);
    with `patterns`, only the mutants whose names match one (the rest are reported as not run)."""
    scratch = workdir / module.replace("/", "_").replace("*", "all")
    scratch_copy(repo, scratch)
    shutil.copy2(Path(__file__).with_name("mutation_model_cache.py"), scratch / "bench")  # an older repo lacks it
    tests = [test for test in tests if (scratch / test).exists()]
    pyproject = scratch / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().split("[tool.mutmut]")[0])
    (scratch / "setup.cfg").write_text(mutmut_config(module, tests))
    started = time.perf_counter()
    mutmut = Path(sys.executable).with_name("mutmut")
    env = {**os.environ, CACHE_ENV: str(workdir / "tiny-models")}
    command = [str(mutmut), "run", "--max-children", str(children), *(patterns or [])]
    subprocess.run(command, cwd=scratch, env=env, check=False)
    score = ModuleScore(module, tests, time.perf_counter() - started)
    for meta in (scratch / "mutants").rglob("*.py.meta"):
        score.codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    score.codes = {name: code for name, code in score.codes.items() if _belongs(name, module)}
    for name in score.survivors:
        shown = subprocess.run([str(mutmut), "show", name], cwd=scratch, capture_output=True, text=True)
        (workdir / f"{name}.diff").write_text(shown.stdout)
    return score


def _belongs(mutant: str, module: str) -> bool:
    dotted = module.removesuffix(".py").removesuffix("/*").replace("/", ".")
    return mutant.startswith(dotted + ".")


RUNS_HEADING = "## Latest run of each module"
EARLIER_HEADINGS = (RUNS_HEADING, "## This run")
COLUMNS = ("module", "mutants", "killed", "timed out", "survived", "of them equivalent", "other", "score", "seconds")
RUN_COLUMNS = ("run (UTC)", "commit")


@dataclass
class ModuleReport:
    """One module's part of the report: its table row, its tests line and its survivors (markdown, kept as written
    so that a run of other modules leaves it, with its run date and commit, as it was)."""

    row: str
    tests: str
    survivors: str = ""


def module_report(s: ModuleScore, workdir: Path, run: str) -> ModuleReport:
    survived = s.survivors
    equivalent = [name for name in survived if name in EQUIVALENT]
    killed = s.count(KILLED) + s.count(TIMED_OUT)
    other = len(s.codes) - killed - len(survived)  # not checked, suspicious or crashed: see mutmut results
    judged = killed + len(survived) - len(equivalent)
    score = f"{killed / judged:.0%}" if judged else "n/a"
    row = (
        f"| {s.module} | {len(s.codes)} | {s.count(KILLED)} | {s.count(TIMED_OUT)} | {len(survived)} | "
        f"{len(equivalent)} | {other} | {score} | {s.seconds:.0f} | {run} |"
    )
    lines = [f"## Survivors in {s.module}", ""] if survived else []
    for name in survived:
        missing = "not reached by any selected test" if s.codes[name] == NO_TESTS else "not killed: a missing test"
        why = EQUIVALENT.get(name, missing)
        diff = (workdir / f"{name}.diff").read_text().strip()
        lines += [f"### {name}", "", why, "", "```diff", diff, "```", ""]
    return ModuleReport(row, f"- {s.module}: {', '.join(s.tests) or 'none'}", "\n".join(lines))


def earlier_reports(text: str) -> tuple[str, dict[str, ModuleReport]]:
    """The hand-written part of an earlier report (everything above its runs) and each module's part of its runs."""
    heading = next((h for h in EARLIER_HEADINGS if h in text), None)
    if heading is None:
        return text, {}
    preface, runs = text.split(heading, 1)
    table, *survivor_sections = runs.split("\n## Survivors in ")
    reports: dict[str, ModuleReport] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("module", "") and not cells[0].startswith("---"):
            cells += ["not recorded"] * (len(COLUMNS) + len(RUN_COLUMNS) - len(cells))  # a row from before run columns
            reports[cells[0]] = ModuleReport("| " + " | ".join(cells) + " |", "")
    for line in table.splitlines():
        module = line.removeprefix("- ").split(": ", 1)[0].split(" (", 1)[0]  # a hand-written note after the name kept
        if line.startswith("- ") and module in reports:
            reports[module].tests = line
    for section in survivor_sections:
        module = section.split("\n", 1)[0].strip()
        if module in reports:
            reports[module].survivors = "## Survivors in " + section.strip() + "\n"
    return preface, reports


def markdown(reports: dict[str, ModuleReport], preface: str) -> str:
    """The report: the hand-written preface, then every module's latest run (in MODULES' order)."""
    order = [module for module in MODULES if module in reports] + sorted(set(reports) - set(MODULES))
    rows = [
        preface.rstrip() or "# Mutation testing (make mutation)",
        "",
        RUNS_HEADING,
        "",
        "mutmut mutates each module in a scratch copy; a mutant is killed when a selected test fails. "
        "The score is killed (timeouts included) over killed and survived, less the survivors listed as "
        "equivalent (they cannot change behaviour); every other survivor is a missing test. A run of some "
        "modules replaces their rows and keeps the others' with the date and commit of their own run.",
        "",
        "| " + " | ".join(COLUMNS + RUN_COLUMNS) + " |",
        "|" + "---|" * (len(COLUMNS) + len(RUN_COLUMNS)),
    ]
    rows += [reports[module].row for module in order]
    rows += ["", "Tests selected per module:", ""]
    rows += [reports[module].tests for module in order if reports[module].tests]
    rows += [""] + [reports[module].survivors for module in order if reports[module].survivors]
    return "\n".join(rows).rstrip() + "\n"


def run_label(repo: Path) -> str:
    """The run's start (UTC) and the commit it mutated, marked when the checkout had uncommitted changes."""
    git = ["git", "-C", str(repo)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    return f"{started} | {commit or 'unknown'}{' + uncommitted changes' if changed.stdout.strip() else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(MODULES), help="a module to mutate (repeatable)")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 1, help="mutants tested at once")
    parser.add_argument("--out", type=Path, default=RESULTS / "mutation.md")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to mutate (e.g. an older commit's)")
    parser.add_argument(
        "--mutants",
        action="append",
        help="run only the mutants matching this fnmatch pattern (repeatable): a sample such as "
        "'trainer.executors.jagg.*0' (every tenth), or the survivors of an earlier run",
    )
    parser.add_argument(
        "--without", action="append", default=[], help="leave this test file out of the selection (the score before it)"
    )
    args = parser.parse_args()
    chosen = args.only or list(MODULES)
    run = run_label(args.repo)
    with tempfile.TemporaryDirectory(prefix="sfumato-mutation-") as folder:
        workdir = Path(folder)
        scores = [
            run_module(
                args.repo,
                module,
                [test for test in MODULES[module] if test not in args.without],
                workdir,
                args.children,
                args.mutants,
            )
            for module in chosen
        ]
        preface, reports = earlier_reports(args.out.read_text() if args.out.exists() else "")
        reports |= {s.module: module_report(s, workdir, run) for s in scores}
        args.out.write_text(markdown(reports, preface))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
