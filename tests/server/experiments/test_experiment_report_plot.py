"""The exported report's reward plot: its step axis has round ticks, each labelled with its step."""

from __future__ import annotations

import re

from experiment_cells import create, run_cell
from server_harness import Harness

from server.services.report_figures import step_ticks


def test_step_ticks_are_at_most_six_round_steps_within_the_range() -> None:
    assert step_ticks(0, 5) == [0, 1, 2, 3, 4, 5]
    assert step_ticks(0, 9) == [0, 2, 4, 6, 8]
    assert step_ticks(3, 997) == [200, 400, 600, 800]
    assert step_ticks(0, 1_000_000) == [0, 200_000, 400_000, 600_000, 800_000, 1_000_000]
    assert step_ticks(7, 7) == [7]


def test_the_report_s_reward_plot_labels_its_step_axis(harness: Harness) -> None:
    host = harness.add_host("gpu-1", device_type="cpu", count=2)
    body = create(harness, ("executor.name", ["native", "jagg"]))
    for cell in body["cells"]:
        run_cell(harness, cell["job_id"], host, 1.0)
    report = harness.client.get(f"/api/v1/experiments/{body['id']}/report?format=html", headers=harness.admin)
    reward_plot = report.text.split("<title>reward/mean by step</title>")[1].split("</svg>")[0]
    labels = re.findall(r'font-size="10" text-anchor="middle">(\d+)</text>', reward_plot)
    assert labels == ["0", "1", "2", "3"]
