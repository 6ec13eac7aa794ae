"""The report's eval samples: every eval prompt, whole, with each of its eval seeds labelled as an eval seed (not
an experiment seed); the Markdown report is a folder (a zip) with its images as files beside report.md."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

import pytest
from experiment_cells import create, run_cell
from server_harness import Harness, Headers, png_bytes

PROMPTS = [
    "a red apple",
    "a blue car",
    "a green field under a wide open summer sky, with long shadows of poplars reaching across it",
    "a yellow taxi parked beside a long brick wall at dusk",
]
EVAL_SEEDS = (0, 1)


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: images on disk and their rendering; the database engine plays no part."""
    return migrated_sqlite_url


def upload_samples(harness: Harness, job_id: int) -> Callable[[Headers], None]:
    """At step 3, an eval sample of every prompt with every eval seed."""

    def upload(token: Headers) -> None:
        for prompt in PROMPTS:
            for seed in EVAL_SEEDS:
                form = {"attempt": "1", "step": "3", "kind": "eval", "prompt": prompt, "seed": str(seed)}
                files = {"image": ("sample.png", png_bytes(8, 8), "image/png")}
                url = f"/api/v1/ingest/{job_id}/samples"
                sent = harness.client.post(url, data=form | {"reward": "0.5"}, files=files, headers=token)
                assert sent.status_code == 201, sent.text

    return upload


@pytest.fixture
def experiment_id(harness: Harness) -> int:
    host = harness.add_host("gpu-1", device_type="cpu", count=2)
    body = create(harness, ("executor.name", ["native", "jagg"]))
    for cell in body["cells"]:
        run_cell(harness, cell["job_id"], host, 1.0, upload_samples(harness, cell["job_id"]))
    return int(body["id"])


def report(harness: Harness, experiment_id: int, fmt: str) -> bytes:
    answer = harness.client.get(f"/api/v1/experiments/{experiment_id}/report?format={fmt}", headers=harness.admin)
    assert answer.status_code == 200, answer.text
    return answer.content


def test_the_html_report_shows_every_eval_prompt_whole(harness: Harness, experiment_id: int) -> None:
    page = report(harness, experiment_id, "html").decode()
    shown = re.findall(r'<p class="prompt">([^<]*)</p>', page)
    assert shown == PROMPTS * 2  # both cell groups, each with all four prompts, none cut short


def test_each_prompt_shows_every_eval_seed_labelled_as_an_eval_seed(harness: Harness, experiment_id: int) -> None:
    page = report(harness, experiment_id, "html").decode()
    captions = re.findall(r"<figcaption>(eval seed \d+[^<]*)</figcaption>", page)
    assert captions == ["eval seed 0 · reward 0.500", "eval seed 1 · reward 0.500"] * len(PROMPTS) * 2
    assert "not the experiment&#x27;s seed" in page


def test_the_markdown_report_is_one_folder_with_its_images_as_files(harness: Harness, experiment_id: int) -> None:
    archive = zipfile.ZipFile(io.BytesIO(report(harness, experiment_id, "md")))
    names = set(archive.namelist())
    folder = f"experiment-{experiment_id}"
    markdown = archive.read(f"{folder}/report.md").decode()
    linked = re.findall(r"\]\((images/[^)]+)\)", markdown)
    assert "data:" not in markdown
    assert len(linked) == 2 + 2 * len(PROMPTS) * len(EVAL_SEEDS)  # two plots and every sample of both groups
    assert {f"{folder}/{link}" for link in linked} == names - {f"{folder}/report.md"}


def test_the_markdown_report_is_the_same_bytes_on_every_download(harness: Harness, experiment_id: int) -> None:
    assert report(harness, experiment_id, "md") == report(harness, experiment_id, "md")
