"""`sfumato show` and `sfumato experiment show` print the server's peak memory wherever they print a duration or
a group's figures, against a live server on the page tests' world."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from experiment_fixtures import seed_experiment
from page_fixtures import World, build_home, make_app, served
from typer.testing import CliRunner

from sfumato.cli import app as cli


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, World, int]]:
    home = tmp_path_factory.mktemp("cli-figures")
    world = build_home(home)
    app = make_app(home)
    experiment_id = seed_experiment(app, world.token)  # native 7 GiB; lean_retain's seeds 7.5 and 7.6 GiB
    with served(app) as url:
        yield url, world, experiment_id


def shown(live: tuple[str, World, int], *args: str) -> list[str]:
    url, world, _ = live
    result = CliRunner().invoke(cli, ["--url", url, "--token", world.token, *args], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_experiment_show_gives_each_cell_s_peak_memory_beside_its_duration(live: tuple[str, World, int]) -> None:
    lines = shown(live, "experiment", "show", str(live[2]))
    header = next(line for line in lines if "CELL" in line and "STATUS" in line)
    assert "PEAK MEMORY" in header and "DURATION" in header
    cells = [line for line in lines if "seed=" in line and "succeeded" in line]
    assert [("7.0 GiB" in c, "7.5 GiB" in c, "7.6 GiB" in c) for c in cells] == [
        (True, False, False),
        (True, False, False),
        (False, True, False),
        (False, False, True),
    ]


def test_experiment_show_gives_each_group_s_peak_memory_with_its_interval(live: tuple[str, World, int]) -> None:
    lines = shown(live, "experiment", "show", str(live[2]))
    header = next(line for line in lines if "GROUP" in line)
    assert "PEAK MEMORY [95%]" in header
    native = next(line for line in lines if line.lstrip("│ ").startswith("native "))
    assert "7.0 GiB [7.0 GiB, 7.0 GiB]" in native


def test_show_gives_a_job_s_peak_memory_beside_its_duration(live: tuple[str, World, int]) -> None:
    _, world, _ = live
    rows = {line.split("  ")[0].strip(): line for line in shown(live, "show", str(world.running.id))}
    assert "duration" in rows and "peak memory" in rows
    assert rows["peak memory"].split()[-2:] == ["7.0", "GiB"]  # (6 + speed 1) GiB at every step
