"""An experiment's report, as Markdown beside its image files (a zip of one folder) or one self-contained HTML
page: the summary's tables and verdicts (each group's time to reward R with its interval over seeds, as the
summary computes it), the reward and samples/s plots (SVG), each cell group's latest eval
samples (every eval prompt with every eval seed), and the notes.

One renderer for the API (`GET /api/v1/experiments/{id}/report`) and the CLI (`sfumato experiment export`,
which downloads it), so both give the same bytes. The Markdown links its images by relative paths, which GitHub
renders (it does not render data: URIs). The HTML page embeds them as data: URIs, and its
Content-Security-Policy allows only inline styles and data: images: opened from a pull request or a laptop
offline, it fetches nothing.
"""

from __future__ import annotations

import base64
import html
import io
import re
import zipfile
from collections.abc import Callable
from typing import Literal

from sqlalchemy.orm import Session

from server.config import Settings
from server.schemas.experiments import ExperimentDetail, Interval
from server.services.auth import Caller
from server.services.experiment_reads import experiment_detail
from server.services.experiment_summary import TIMES
from server.services.markdown_text import markdown_html, markdown_quote, markdown_text
from server.services.report_figures import GroupSamples, ReportFigures, report_figures

ReportFormat = Literal["md", "html"]
REPORT_TYPES: dict[str, str] = {"md": "application/zip", "html": "text/html; charset=utf-8"}
MARKDOWN_NAME = "report.md"  # in the zip's one folder, experiment-ID/, beside images/
IMAGES = "images"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d232a}"
    "table{border-collapse:collapse;margin:.5rem 0 1.25rem}th,td{border:1px solid #cfd6dd;padding:.3rem .55rem;"
    "text-align:left;vertical-align:top}th{background:#eef2f5}td.num{text-align:right;font-variant-numeric:"
    "tabular-nums}figure{margin:.5rem 0 1.5rem}.gallery{display:flex;flex-wrap:wrap;gap:.75rem}.gallery figure"
    "{margin:0;width:9rem}.gallery img{width:9rem;height:9rem;image-rendering:pixelated;border:1px solid #cfd6dd}"
    "figcaption{font-size:12px;color:#4a5561;overflow-wrap:anywhere}.flag{color:#9a3b00}"
    ".prompt{margin:.75rem 0 .25rem;font-weight:600;overflow-wrap:anywhere}.source{color:#4a5561;font-size:13px}"
)


def _number(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def _interval(value: Interval | None, digits: int = 4, scale: float = 1.0, suffix: str = "") -> str:
    """`12.3 [11.9, 12.7]`, `12.3 (n = 1)` or `—`."""
    if value is None or value.mean is None:
        return "—"
    mean = f"{value.mean / scale:.{digits}g}{suffix}"
    if value.low is None or value.high is None:
        return f"{mean} (n = {value.n})"
    return f"{mean} [{value.low / scale:.{digits}g}, {value.high / scale:.{digits}g}]"


def _time_to_reward_header(detail: ExperimentDetail) -> str:
    target = detail.summary.reward_target
    return "time to R (s)" if target is None else f"time to R = {target:.4g} (s)"


def _time_to_reward_note(detail: ExperimentDetail) -> str:
    """The R every time to reward is measured to, why that R, and what a time to reward is."""
    summary = detail.summary
    if summary.reward_target is None:
        return f"Time to reward: {summary.reward_target_reason}."
    return (
        f"Time to reward R = {summary.reward_target:.4g}: {summary.reward_target_reason}; "
        f"{summary.definitions.time_to_reward}."
    )


def _tables(detail: ExperimentDetail) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Every table of the report as (header, rows) of plain text; both formats render these."""
    summary = detail.summary
    groups = [
        [
            g.label,
            str(len(g.job_ids)),
            _interval(g.samples_per_s),
            _interval(g.speedup, 3, suffix=TIMES),
            _interval(g.peak_memory_bytes, 4, 2**20, " MiB"),
            _interval(g.final_reward),
            _interval(g.eval_reward),
            _interval(g.time_to_reward_s),
            g.reached_reward,
        ]
        for g in summary.groups
    ]
    rows = {row.id: row for row in summary.jobs}
    cells = []
    for cell in detail.cells:
        row = rows[cell.job_id]
        cells.append(
            [
                ", ".join(f"{p}={v}" for p, v in cell.values.items()),
                str(cell.job_id),
                str(cell.position),
                str(cell.block + 1),
                _number(summary.host_loads.get(cell.job_id)),
                cell.status,
                summary.device_models.get(cell.job_id, "—"),
                _number(row.samples_per_s),
                "—" if row.peak_memory_bytes is None else f"{row.peak_memory_bytes / 2**20:.4g} MiB",
                _number(row.final_reward),
                _number(row.eval_reward),
                "—" if row.time_to_reward_s is None else f"{row.time_to_reward_s:.4g}",
            ]
        )
    return {
        "groups": (
            [
                "group",
                "seeds",
                "samples/s",
                "speedup vs native",
                "peak memory",
                "final reward",
                "eval reward",
                _time_to_reward_header(detail),
                "reached R",
            ],
            groups,
        ),
        "cells": (
            [
                "cell",
                "job",
                "queue order",
                "block",
                "host load",
                "status",
                "device",
                "samples/s",
                "peak memory",
                "final reward",
                "eval reward",
                _time_to_reward_header(detail),
            ],
            cells,
        ),
        "flags": (["job", "cell", "problem"], [[str(f.job_id), f.cell, f.problem] for f in summary.flags]),
    }


def _facts(detail: ExperimentDetail) -> list[tuple[str, str]]:
    axes = "; ".join(f"{a.path} = {', '.join(str(v) for v in a.values)}" for a in detail.axes)
    fair = (
        f"yes: every cell exclusive on {detail.gpu_model or 'one device model'}, queued in counterbalanced blocks "
        f"of one seed each (first block's order shuffled with seed {detail.order_seed})"
        if detail.fair_timing
        else "no"
    )
    return [
        ("team", detail.team or "—"),
        ("created by", detail.created_by or "—"),
        ("created", detail.created_at.strftime("%Y-%m-%d %H:%M UTC")),
        ("state", f"{detail.state} ({', '.join(f'{n} {s}' for s, n in detail.status_counts.items())})"),
        ("axes", axes),
        ("fair timing", fair),
        *(("warning", warning) for warning in detail.warnings),
    ]


def _plot_file(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + ".svg"


def _markdown(detail: ExperimentDetail, figures: ReportFigures) -> str:
    """Every text that comes from a user or the stored data (names, values, labels, prompts, notes) is quoted
    through services.markdown_text, so it shows as written and never as HTML or Markdown. Images are linked as
    files under images/ (`_markdown_folder` writes them)."""
    md = markdown_text

    def table(header: list[str], rows: list[list[str]]) -> list[str]:
        def line(cells: list[str]) -> str:
            return "| " + " | ".join(md(c) for c in cells) + " |"

        return [line(header), "|" + "---|" * len(header), *(line(r) for r in rows), ""]

    def image(alt: str, file_name: str) -> str:
        return f"![{md(alt)}]({IMAGES}/{file_name})"

    tables = _tables(detail)
    out = [f"# Experiment {detail.id}: {md(detail.name)}", ""]
    out += [f"- **{k}**: {md(v)}" for k, v in _facts(detail)] + [""]
    out += ["## Verdicts", ""] + ([f"- {md(v.text)}" for v in detail.summary.verdicts] or ["- no executor to judge"])
    out += ["", "## Cell groups (mean [95% interval] over seeds)", "", *table(*tables["groups"])]
    out += [md(_time_to_reward_note(detail)), ""]
    if detail.summary.flags:
        out += ["## Flagged cells", "", *table(*tables["flags"])]
    out += ["## Plots", ""]
    out += [image(title, _plot_file(title)) + "\n" for title, _ in figures.plots]
    out += ["## Cells", "", *table(*tables["cells"])]
    if figures.samples:
        out += ["## Latest eval samples", ""]
        for group in figures.samples:
            out += [f"### {md(group.group)}", "", md(group.source), ""]
            for prompt, images in group.prompts:
                out += [f"**{md(prompt)}**", ""]
                out += [" ".join(image(f"{prompt}, {i.caption}", i.file_name) for i in images), ""]
                out += [", ".join(md(i.caption) for i in images), ""]
    if detail.notes:
        out += ["## Notes", ""]
        for note in detail.notes:
            when = note.created_at.strftime("%Y-%m-%d %H:%M")
            out += [f"**{md(note.author)}**, {when}:", "", markdown_quote(note.body), ""]
    out += ["## Method", "", detail.summary.method, "", f"samples/s: {detail.summary.definitions.samples_per_s}", ""]
    return "\n".join(out)


def _html(detail: ExperimentDetail, figures: ReportFigures) -> str:
    esc: Callable[[object], str] = lambda value: html.escape(str(value))  # noqa: E731

    def table(header: list[str], rows: list[list[str]], numeric_from: int) -> str:
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="num">{esc(c)}</td>' if i >= numeric_from else f"<td>{esc(c)}</td>" for i, c in enumerate(r)
            )
            + "</tr>"
            for r in rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    tables = _tables(detail)
    title = f"Experiment {detail.id}: {detail.name}"
    parts = [
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" '
        f'content="{CSP}"><title>{esc(title)}</title><style>{STYLE}</style></head><body>',
        f"<h1>{esc(title)}</h1><dl>",
        *(f"<dt><b>{esc(k)}</b></dt><dd>{esc(v)}</dd>" for k, v in _facts(detail)),
        "</dl><h2>Verdicts</h2><ul>",
        *(f"<li>{esc(v.text)}</li>" for v in detail.summary.verdicts),
        "</ul>" if detail.summary.verdicts else "<li>no executor to judge</li></ul>",
        "<h2>Cell groups (mean [95% interval] over seeds)</h2>",
        table(*tables["groups"], numeric_from=1),
        f'<p class="source">{esc(_time_to_reward_note(detail))}</p>',
    ]
    if detail.summary.flags:
        parts += ['<h2 class="flag">Flagged cells</h2>', table(*tables["flags"], numeric_from=99)]
    parts += ["<h2>Plots</h2>"]
    parts += [f"<figure>{svg}<figcaption>{esc(plot_title)}</figcaption></figure>" for plot_title, svg in figures.plots]
    parts += ["<h2>Cells</h2>", table(*tables["cells"], numeric_from=5)]
    if figures.samples:
        parts += ["<h2>Latest eval samples</h2>", *(_html_samples(group) for group in figures.samples)]
    if detail.notes:
        parts += ["<h2>Notes</h2>"]
        parts += [
            f"<section><p><b>{esc(n.author)}</b>, {esc(n.created_at.strftime('%Y-%m-%d %H:%M'))}:</p>"
            f"{markdown_html(n.body)}</section>"
            for n in detail.notes
        ]
    parts += [
        "<h2>Method</h2>",
        f"<p>{esc(detail.summary.method)}</p><p>samples/s: {esc(detail.summary.definitions.samples_per_s)}</p>",
        "</body></html>",
    ]
    return "".join(parts)


def _html_samples(group: GroupSamples) -> str:
    """A group's eval samples: each prompt whole (wrapped), then its eval seeds' images with their captions."""
    esc = html.escape
    parts = [f'<h3>{esc(group.group)}</h3><p class="source">{esc(group.source)}</p>']
    for prompt, images in group.prompts:
        parts += [f'<p class="prompt">{esc(prompt)}</p><div class="gallery">']
        parts += [
            f'<figure><img alt="{esc(f"{prompt}, {i.caption}")}" src="data:{i.media_type};base64,'
            f'{base64.b64encode(i.data).decode()}"><figcaption>{esc(i.caption)}</figcaption></figure>'
            for i in images
        ]
        parts += ["</div>"]
    return "".join(parts)


def _markdown_folder(detail: ExperimentDetail, figures: ReportFigures) -> bytes:
    """A zip of one folder, experiment-ID/: report.md and, beside it, images/ with the plots and samples."""
    folder = f"experiment-{detail.id}"
    files: list[tuple[str, str | bytes]] = [(MARKDOWN_NAME, _markdown(detail, figures))]
    files += [(f"{IMAGES}/{_plot_file(title)}", svg) for title, svg in figures.plots]
    files += [
        (f"{IMAGES}/{image.file_name}", image.data)
        for group in figures.samples
        for _, images in group.prompts
        for image in images
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files:
            # A fixed date: the same experiment gives the same bytes on every download.
            entry = zipfile.ZipInfo(f"{folder}/{name}", date_time=ZIP_DATE)
            archive.writestr(entry, data, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def experiment_report(
    session: Session, caller: Caller, experiment_id: int, format: ReportFormat, settings: Settings
) -> bytes:
    """The report of an experiment the caller may see (404 otherwise): the HTML page as UTF-8 bytes, or the
    Markdown folder as a zip."""
    detail = experiment_detail(session, caller, experiment_id)
    figures = report_figures(session, settings, detail)
    return _markdown_folder(detail, figures) if format == "md" else _html(detail, figures).encode()
