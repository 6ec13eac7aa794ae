"""The report's pictures: the reward curve of each cell group (mean over seeds, with a band from the lowest to
the highest seed), samples/s per group with its 95% interval, both as inline SVG; and each group's latest eval
samples (every eval prompt with every eval seed), read from the artifact store. Curves come from
services.experiment_curves, the figures from the summary."""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Sample
from server.schemas.experiments import CellGroup, ExperimentDetail
from server.services.artifact_store import stored_file
from server.services.compare import REWARD_KEY
from server.services.current_points import current_points
from server.services.experiment_curves import CurveGroup, group_curves

CURVE_POINTS = 200
WIDTH, HEIGHT, PAD = 720, 300, 48
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f")


@dataclass(frozen=True)
class EvalImage:
    """One eval sample: a prompt drawn with one of the spec's fixed eval seeds (`samples.count` per prompt, the
    same at every step), not one of the experiment's seeds."""

    prompt: str
    eval_seed: int
    reward: float | None
    media_type: str
    data: bytes
    file_name: str  # where an exported folder keeps it, under images/

    @property
    def caption(self) -> str:
        return f"eval seed {self.eval_seed}" + ("" if self.reward is None else f" · reward {self.reward:.3f}")


@dataclass
class GroupSamples:
    """A cell group's latest eval samples: every eval prompt, in the spec's order, each with its eval seeds; drawn
    by one cell of the group (`cell`, job `job_id`) at `step`."""

    group: str
    cell: str
    job_id: int
    step: int
    prompts: list[tuple[str, list[EvalImage]]] = field(default_factory=list)

    @property
    def source(self) -> str:
        return (
            f"job {self.job_id} ({self.cell}) at step {self.step}; an eval seed is the fixed noise seed of an eval "
            "sample (samples.count per prompt), not the experiment's seed"
        )


@dataclass
class ReportFigures:
    plots: list[tuple[str, str]] = field(default_factory=list)  # (title, SVG)
    samples: list[GroupSamples] = field(default_factory=list)


def _scale(lo: float, hi: float, out_lo: float, out_hi: float) -> tuple[float, float]:
    span = hi - lo or 1.0
    return (out_hi - out_lo) / span, out_lo - lo * (out_hi - out_lo) / span


def step_ticks(lo: int, hi: int, most: int = 6) -> list[int]:
    """At most `most` round steps (1, 2 or 5 times a power of ten apart) from `lo` to `hi`, for the step axis."""
    gap, factors = 1, itertools.cycle((2.0, 2.5, 2.0))
    while (hi - lo) // gap + 1 > most:
        gap = round(gap * next(factors))
    first = -(-lo // gap) * gap
    return list(range(first, hi + 1, gap))


def _frame(
    title: str,
    x_label: str,
    y_lo: float,
    y_hi: float,
    body: list[str],
    legend: list[tuple[str, str]],
    x_ticks: Sequence[tuple[float, str]] = (),
) -> str:
    """Axes with y ticks (and x ticks: position in px, label), the body, and the legend above."""
    ticks = [y_lo + (y_hi - y_lo) * i / 4 for i in range(5)]
    ys, yo = _scale(y_lo, y_hi, HEIGHT - PAD, PAD / 2)
    axis = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - 10}" y2="{HEIGHT - PAD}" stroke="#333"/>',
        f'<line x1="{PAD}" y1="{PAD / 2}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#333"/>',
        *(
            f'<text x="{PAD - 4}" y="{t * ys + yo + 4:.1f}" font-size="10" text-anchor="end">{t:.3g}</text>'
            for t in ticks
        ),
        *(
            f'<line x1="{x:.1f}" y1="{HEIGHT - PAD}" x2="{x:.1f}" y2="{HEIGHT - PAD + 4}" stroke="#333"/>'
            f'<text x="{x:.1f}" y="{HEIGHT - PAD + 15}" font-size="10" text-anchor="middle">{html.escape(label)}</text>'
            for x, label in x_ticks
        ),
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" font-size="11" text-anchor="middle">{html.escape(x_label)}</text>',
    ]
    keys = [
        f'<rect x="{PAD + 10 + 150 * (i % 4)}" y="{8 + 14 * (i // 4)}" width="10" height="10" fill="{colour}"/>'
        f'<text x="{PAD + 24 + 150 * (i % 4)}" y="{17 + 14 * (i // 4)}" font-size="11">{html.escape(label[:24])}</text>'
        for i, (label, colour) in enumerate(legend)
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT + 14 * (len(legend) // 4)}" '
        f'viewBox="0 {-14 * (len(legend) // 4)} {WIDTH} {HEIGHT + 14 * (len(legend) // 4)}" role="img" '
        f'font-family="sans-serif"><title>{html.escape(title)}</title>{"".join(axis + body + keys)}</svg>'
    )


def _reward_plot(session: Session, groups: list[CellGroup]) -> str | None:
    """Mean reward over each group's seeds per step, a band from the lowest to the highest seed."""
    wanted = [CurveGroup(g.label, g.executor, g.job_ids) for g in groups]
    curves = [
        (c.label, c.steps, c.mean, c.low, c.high) for c in group_curves(session, wanted, REWARD_KEY, CURVE_POINTS)
    ]
    if not curves:
        return None
    x_lo, x_hi = min(c[1][0] for c in curves), max(c[1][-1] for c in curves)
    y_lo, y_hi = min(min(c[3]) for c in curves), max(max(c[4]) for c in curves)
    xs, xo = _scale(x_lo, x_hi, PAD, WIDTH - 10)
    ys, yo = _scale(y_lo, y_hi, HEIGHT - PAD, PAD / 2)
    body, legend = [], []
    for i, (label, steps, mean, low, high) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        upper = [f"{s * xs + xo:.1f},{h * ys + yo:.1f}" for s, h in zip(steps, high, strict=True)]
        lower = [f"{s * xs + xo:.1f},{lo * ys + yo:.1f}" for s, lo in zip(steps, low, strict=True)]
        line = [f"{s * xs + xo:.1f},{m * ys + yo:.1f}" for s, m in zip(steps, mean, strict=True)]
        body.append(f'<polygon points="{" ".join(upper + lower[::-1])}" fill="{colour}" fill-opacity="0.15"/>')
        body.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        legend.append((label, colour))
    x_ticks = [(step * xs + xo, str(step)) for step in step_ticks(int(x_lo), int(x_hi))]
    x_label = f"step ({REWARD_KEY}: mean over seeds, band: min to max)"
    return _frame(f"{REWARD_KEY} by step", x_label, y_lo, y_hi, body, legend, x_ticks)


def _speed_plot(groups: list[CellGroup]) -> str | None:
    """Each group's samples/s as a bar, its 95% interval as a whisker."""
    known = [g for g in groups if g.samples_per_s.mean is not None]
    if not known:
        return None
    top = max(max(g.samples_per_s.high or 0.0, g.samples_per_s.mean or 0.0) for g in known) * 1.1
    ys, yo = _scale(0.0, top, HEIGHT - PAD, PAD / 2)
    slot = (WIDTH - PAD - 20) / len(known)
    body, legend = [], []
    for i, group in enumerate(known):
        colour = COLOURS[i % len(COLOURS)]
        stats = group.samples_per_s
        x = PAD + 10 + i * slot
        y = (stats.mean or 0.0) * ys + yo
        body.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.6:.1f}" height="{HEIGHT - PAD - y:.1f}" fill="{colour}"/>'
        )
        if stats.low is not None and stats.high is not None:
            mid = x + slot * 0.3
            body.append(
                f'<line x1="{mid:.1f}" y1="{stats.low * ys + yo:.1f}" x2="{mid:.1f}" y2="{stats.high * ys + yo:.1f}" '
                'stroke="#111" stroke-width="1.5"/>'
            )
        legend.append((group.label, colour))
    return _frame(
        "samples/s per cell group", "cell group (bar: mean over seeds, whisker: 95% interval)", 0.0, top, body, legend
    )


def _latest_eval_samples(
    session: Session, settings: Settings, job_id: int, group: int, cell: str, label: str
) -> GroupSamples | None:
    """The job's latest current eval step: every eval prompt (in the order the trainer drew them) with every eval
    seed of it, and their rewards."""
    current = current_points(session, job_id)
    steps = session.execute(
        select(Sample.step, func.max(Sample.attempt))
        .where(Sample.job_id == job_id, Sample.kind == "eval")
        .group_by(Sample.step)
    ).all()
    current_steps = sorted((s for s, a in steps if current.is_current(a, s)), reverse=True)
    if not current_steps:
        return None
    rows = session.scalars(
        select(Sample)
        .where(Sample.job_id == job_id, Sample.kind == "eval", Sample.step == current_steps[0])
        .order_by(Sample.id)
    ).all()
    found = GroupSamples(label, cell, job_id, current_steps[0])
    by_prompt: dict[str, list[EvalImage]] = {}
    for sample in rows:
        path = stored_file(settings, sample.image_path)
        if not current.is_current(sample.attempt, sample.step) or not path.is_file():
            continue
        images = by_prompt.setdefault(sample.prompt, [])
        media_type, extension = ("image/webp", "webp") if sample.image_path.endswith(".webp") else ("image/png", "png")
        name = f"group{group + 1}-prompt{len(by_prompt)}-seed{sample.seed}.{extension}"
        images[:] = [i for i in images if i.eval_seed != sample.seed]  # a later attempt's sample replaces one
        images.append(EvalImage(sample.prompt, sample.seed, sample.reward, media_type, path.read_bytes(), name))
    found.prompts = [(prompt, sorted(images, key=lambda i: i.eval_seed)) for prompt, images in by_prompt.items()]
    return found if found.prompts else None


def report_figures(session: Session, settings: Settings, detail: ExperimentDetail) -> ReportFigures:
    figures = ReportFigures()
    groups = detail.summary.groups
    for title, svg in (("reward by step", _reward_plot(session, groups)), ("samples/s", _speed_plot(groups))):
        if svg is not None:
            figures.plots.append((title, svg))
    cells = {cell.job_id: ", ".join(f"{p}={v}" for p, v in cell.values.items()) for cell in detail.cells}
    for index, group in enumerate(groups):
        if not group.job_ids:
            continue
        job_id = group.job_ids[0]
        samples = _latest_eval_samples(session, settings, job_id, index, cells.get(job_id, ""), group.label)
        if samples is not None:
            figures.samples.append(samples)
    return figures
