"""The submit form offers Wan image-to-video (``model.family`` wan_i2v) and, chosen, shows its video option
``model.num_frames`` as it does for ``wan``."""

from __future__ import annotations

from fastapi.testclient import TestClient
from page_fixtures import csrf_of
from test_submit_form_families import shown


def test_the_family_choice_offers_wan_i2v(client: TestClient) -> None:
    choice = client.get("/submit").text.split('name="model.family"', 1)[1].split("</select>", 1)[0]
    assert '<option value="wan_i2v"' in choice


def test_choosing_wan_i2v_shows_the_number_of_frames(client: TestClient) -> None:
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "", "model.family": "wan_i2v", "reward.0.name": "brightness"}
    html = client.post("/submit", data=form).text  # an empty name is refused: the form comes back, wan_i2v chosen
    assert shown(html, "model.num_frames")
