"""The Services page creates and stops reward services through the API's own calls: the New service form stores
a service or names the field it refuses, a Stop button stops one, and only for a caller the service layer lets
stop it; every write needs the session's CSRF token."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import PASSWORD, csrf_of
from sqlalchemy import func, select, update

from server.models import Device, Membership, RewardService, User
from server.services.reward_services import servable_rewards

BRIGHT = {"name": "bright-web", "reward": "brightness", "path": "", "device_type": "cuda", "devices": "1"}


def service_count(app: FastAPI) -> int:
    with app.state.sessionmaker() as session:
        return session.scalar(select(func.count()).select_from(RewardService)) or 0


def service_named(app: FastAPI, name: str) -> RewardService | None:
    with app.state.sessionmaker() as session:
        return session.scalar(select(RewardService).where(RewardService.name == name))


def create(client: TestClient, **fields: Any) -> Any:
    form = {**BRIGHT, **fields, "csrf_token": csrf_of(client.get("/services").text)}
    return client.post("/services", data=form)


def stop(client: TestClient, service_id: int) -> Any:
    headers = {"HX-Request": "true", "X-CSRF-Token": csrf_of(client.get("/services").text)}
    return client.post(f"/services/{service_id}/stop", headers=headers)


def service_id(app: FastAPI, name: str) -> int:
    service = service_named(app, name)
    assert service is not None
    return service.id


def add_user(app: FastAPI, username: str, role: str | None) -> None:
    """A user with the world's password, `role` in its team (or in none)."""
    hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    with app.state.sessionmaker.begin() as session:
        user = User(username=username, password_hash=hasher.hash(PASSWORD))
        session.add(user)
        session.flush()
        if role is not None:
            session.add(Membership(user_id=user.id, team_id=1, role=role))


def log_in(anon: TestClient, username: str) -> TestClient:
    form = {"username": username, "password": PASSWORD, "csrf_token": csrf_of(anon.get("/login").text)}
    assert anon.post("/login", data=form).status_code == 303
    return anon


def stop_forms(page: str) -> list[str]:
    return re.findall(r'action="/services/(\d+)/stop"', page)


def test_a_service_created_through_the_form_is_stored_pending_and_listed(client: TestClient, app: FastAPI) -> None:
    response = create(client)
    created = service_named(app, "bright-web")
    assert created is not None and created.state == "pending" and created.path is None
    assert response.status_code == 303 and response.headers["location"] == f"/services#service-{created.id}"
    assert f'id="service-{created.id}"' in client.get("/services").text


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": "Has Spaces"}, "name", "String should match pattern"),
        ({"reward": "pickscore"}, "path", "reward 'pickscore' loads a model: give the local directory of its weights"),
        ({"reward": "remote"}, "reward", "a service runs its own reward server"),
        ({"devices": "9"}, "devices", "asks for 9 cuda devices on one host; the largest has 4"),
        ({"devices": "two"}, "devices", "Input should be a valid integer"),
    ],
)
def test_a_refused_field_is_named_beside_it_in_the_open_form_and_nothing_is_stored(
    client: TestClient, app: FastAPI, fields: dict[str, str], field: str, message: str
) -> None:
    before = service_count(app)
    response = create(client, **fields)
    assert response.status_code == 422
    error = re.search(rf'<small class="field-error" id="e-{field}" data-field="{field}">([^<]+)</small>', response.text)
    assert error and html.unescape(error.group(1)).startswith(message), response.text
    assert '<details class="new-service" id="new-service" open>' in response.text
    typed = {**BRIGHT, **fields}
    assert f'name="name" value="{html.escape(typed["name"])}"' in response.text
    assert f'name="devices" value="{typed["devices"]}"' in response.text
    assert service_count(app) == before


def chosen(page: str, select_id: str) -> list[str]:
    select_html = re.search(rf'<select id="{select_id}".*?</select>', page, re.S)
    assert select_html
    return re.findall(r'<option value="([^"]+)" selected', select_html.group(0))


def test_the_reward_select_offers_the_rewards_a_service_can_serve_one_without_weights_chosen(
    client: TestClient,
) -> None:
    select_html = re.search(r'<select id="f-reward".*?</select>', client.get("/services").text, re.S)
    assert select_html and re.findall(r'<option value="([^"]+)"', select_html.group(0)) == servable_rewards()
    assert chosen(client.get("/services").text, "f-reward") == ["brightness"]  # pickscore needs a weights path


def test_the_device_type_chosen_is_one_the_online_hosts_offer(client: TestClient, app: FastAPI) -> None:
    assert chosen(client.get("/services").text, "f-device-type") == ["cuda"]  # the world's GPU host
    with app.state.sessionmaker.begin() as session:
        session.execute(update(Device).values(device_type="cpu"))  # a CPU-only platform
    assert chosen(client.get("/services").text, "f-device-type") == ["cpu"]


def test_creating_or_stopping_without_the_csrf_token_is_refused(client: TestClient, app: FastAPI) -> None:
    pending = service_id(app, "hpsv2-large")
    assert client.post("/services", data=BRIGHT).status_code == 403
    assert client.post(f"/services/{pending}/stop", headers={"HX-Request": "true"}).status_code == 403
    assert service_named(app, "bright-web") is None
    assert service_named(app, "hpsv2-large").state == "pending"  # type: ignore[union-attr]


def test_stop_from_the_page_stops_the_service_and_answers_the_table_without_its_button(
    client: TestClient, app: FastAPI
) -> None:
    pending, healthy = service_id(app, "hpsv2-large"), service_id(app, "pickscore-a")
    assert sorted(stop_forms(client.get("/services").text)) == sorted([str(pending), str(healthy)])
    response = stop(client, pending)
    assert response.status_code == 200
    assert '<span class="status status-stopped">stopped</span>' in response.text
    assert stop_forms(response.text) == [str(healthy)]
    assert service_named(app, "hpsv2-large").state == "stopped"  # type: ignore[union-attr]


def test_the_stop_button_asks_first(client: TestClient) -> None:
    assert 'hx-confirm="Stop service hpsv2-large (#' in client.get("/services").text


def test_a_plain_form_stop_goes_back_to_the_page(client: TestClient, app: FastAPI) -> None:
    pending = service_id(app, "hpsv2-large")
    token = csrf_of(client.get("/services").text)
    response = client.post(f"/services/{pending}/stop", data={"csrf_token": token})
    assert response.status_code == 303 and response.headers["location"] == f"/services#service-{pending}"


def test_stopping_a_stopped_service_answers_409_with_a_readable_reason(client: TestClient, app: FastAPI) -> None:
    pending = service_id(app, "hpsv2-large")
    stop(client, pending)
    response = stop(client, pending)
    assert response.status_code == 409
    reason = f"Service #{pending} was not stopped: service 'hpsv2-large' is already stopped"
    assert reason in html.unescape(response.text)


@pytest.mark.parametrize(
    ("username", "role", "status"),
    [("bob", "member", 403), ("vera", "viewer", 403), ("otto", None, 404)],
    ids=["member-not-creator", "viewer", "outside-the-team"],
)
def test_a_caller_who_may_not_stop_a_service_sees_no_stop_button_and_is_refused(
    app: FastAPI, anon: TestClient, username: str, role: str | None, status: int
) -> None:
    if username != "bob":  # bob is the world's member already; he created neither service
        add_user(app, username, role)
    caller = log_in(anon, username)
    pending = service_id(app, "hpsv2-large")
    assert stop_forms(caller.get("/services").text) == []
    response = stop(caller, pending)
    assert response.status_code == status and "was not stopped" in response.text
    assert service_named(app, "hpsv2-large").state == "pending"  # type: ignore[union-attr]


def test_a_viewer_is_not_offered_the_new_service_form(app: FastAPI, anon: TestClient) -> None:
    add_user(app, "vera", "viewer")
    viewer = log_in(anon, "vera")
    assert 'id="new-service"' not in viewer.get("/services").text


def test_a_viewer_s_crafted_create_is_refused_with_its_reason_and_stores_nothing(
    app: FastAPI, anon: TestClient
) -> None:
    add_user(app, "vera", "viewer")
    viewer = log_in(anon, "vera")
    before = service_count(app)
    response = create(viewer)
    assert response.status_code == 422
    assert "role 'viewer' in team 'vision' cannot submit jobs" in html.unescape(response.text)
    assert service_count(app) == before
