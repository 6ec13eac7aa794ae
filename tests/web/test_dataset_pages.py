"""The datasets' pages: the upload form makes a version and opens the dataset's page (its versions, the spec source
that names them, a preview of the first rows, an edit set's rows as thumbnails served through the API with the page
session), and a refused upload is the form again with the API's message naming the line and column."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of, png
from sqlalchemy import func, select

from server.models import DatasetVersion

EDIT_ROWS = b'{"prompt": "make it red", "image": "cat.png"}\n{"prompt": "add a hat", "image": "dog.png"}\n'


def post_upload(client: TestClient, fields: dict[str, str], files: list[tuple[str, tuple[str, bytes]]]) -> object:
    token = csrf_of(client.get("/datasets").text)
    return client.post("/datasets", data=fields | {"csrf_token": token}, files=files)


def test_the_upload_form_makes_a_version_and_opens_the_datasets_page(client: TestClient) -> None:
    files = [("train", ("train.txt", b"a cat\na dog\n")), ("test", ("test.txt", b"a bird\n"))]
    response = post_upload(client, {"name": "captions", "format": "text"}, files)
    assert response.status_code == 303, response.text  # type: ignore[attr-defined]
    assert response.headers["location"] == "/datasets/captions?team=vision"  # type: ignore[attr-defined]
    page = client.get("/datasets/captions?team=vision").text
    assert "<code>dataset:captions@1</code>" in page and "train 1, test 1" not in page and "train 2, test 1" in page
    preview = page.split('id="preview"', 1)[1]
    assert re.findall(r'<td class="num">(\d+)</td><td>([^<]+)</td>', preview) == [("1", "a cat"), ("2", "a dog")]
    listed = client.get("/datasets").text
    assert '<a href="/datasets/captions?team=vision">captions</a>' in listed
    assert '<a href="/datasets" aria-current="page">Datasets</a>' in listed


def test_a_refused_upload_is_the_form_again_naming_the_line_and_column(client: TestClient, app: FastAPI) -> None:
    files = [("train", ("train.txt", b'a sign "Open"\na sign with no text\n'))]
    response = post_upload(client, {"name": "signs", "format": "ocr"}, files)
    assert response.status_code == 422  # type: ignore[attr-defined]
    errors = response.text.split('id="form-errors"', 1)[1].split("</div>", 1)[0]  # type: ignore[attr-defined]
    assert "<code>train</code>: line 2, column 20: no text in double quotes (&#34;...&#34;) to render" in errors
    assert 'value="signs"' in response.text  # type: ignore[attr-defined]
    with app.state.sessionmaker() as session:
        assert session.scalar(select(func.count()).select_from(DatasetVersion)) == 0


def test_an_edit_sets_page_shows_its_rows_as_thumbnails_served_by_the_api(client: TestClient) -> None:
    cat, dog = png((200, 40, 40)), png((40, 40, 200))
    files = [("train", ("train.jsonl", EDIT_ROWS)), ("images", ("cat.png", cat)), ("images", ("dog.png", dog))]
    assert post_upload(client, {"name": "edits", "format": "edit"}, files).status_code == 303  # type: ignore[attr-defined]
    page = client.get("/datasets/edits?team=vision").text
    sources = re.findall(r'<img src="([^"]+)" alt="([^"]+)"', page.split('class="dataset-thumbs"', 1)[1])
    assert [alt for _, alt in sources] == ["cat.png", "dog.png"]
    served = [client.get(src.replace("&amp;", "&")) for src, _ in sources]
    assert [(r.status_code, r.content) for r in served] == [(200, cat), (200, dog)]


def test_the_job_page_names_the_dataset_version_the_job_runs_on(client: TestClient, world: World) -> None:
    post_upload(client, {"name": "captions", "format": "text"}, [("train", ("train.txt", b"a cat\n"))])
    post_upload(client, {"name": "captions", "format": "text"}, [("train", ("train.txt", b"a dog\n"))])
    spec = {"name": "on-a-dataset", "resources": {"device_type": "cuda"}, "prompts": {"source": "dataset:captions"}}
    submitted = client.post("/api/v1/jobs", json=spec, headers={"Authorization": f"Bearer {world.token}"})
    assert submitted.status_code == 201, submitted.text
    page = client.get(f"/jobs/{submitted.json()['id']}").text
    line = page.split('id="dataset-source">', 1)[1].split("</p>", 1)[0]
    assert line.startswith('prompts.source: <a href="/datasets/captions"><code>dataset:captions@2:train</code></a>')
