"""Every route of the assembled app that takes an id of something a team owns, called with another team's and with
a missing id by every kind of caller who may not see it: the answers are the same, a 404 (401 without a token; the
login page for a page without a session), so an answer never tells whether the id exists for someone else.

The routes come from the app's route table (tests/security/route_table.py), not from a list: a new route with a
known id parameter is checked the day it is added, and a new route that takes no such id fails
`test_every_route_is_checked_or_exempt_with_a_reason` until EXEMPT says why it needs no check.
"""

from __future__ import annotations

import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient
from route_table import AppRoute, assembled_routes
from security_support import csrf_of, serve
from server_harness import Harness, Headers, Response
from sqlalchemy import delete
from team_things import MISSING_ID, TeamThings, plant

from server.config import Settings
from server.models import Team

# Path parameters that name something a team owns (TeamThings.ids has one of each).
OWNED = (
    "job_id",
    "sample_id",
    "experiment_id",
    "service_id",
    "advice_id",
    "team_id",
    "user_id",
    "token_id",
    "webhook_id",
    "artifact_id",
    "model_name",
    "version",
    "alias",
    "evaluation_id",
    "dataset_name",
)
# The query a route is called with: what it requires, and the owned ids of routes that take them in the query.
QUERIES = {
    "GET /api/v1/compare": "jobs={job_id}",
    "GET /compare": "job={job_id}",
    "GET /compare/gallery": "job={job_id}",
    "GET /api/v1/jobs/{job_id}/metrics": "keys=loss",
    "GET /api/v1/jobs/{job_id}/metrics/history": "key=loss",
    "GET /api/v1/experiments/{experiment_id}/curves": "key=loss",
}
# Pages that show the jobs asked for that the caller may see and leave the others out, a missing id as well.
LEAVES_OUT = {"GET /compare", "GET /compare/gallery"}
# API reads that judge the bearer token alone, never a page session: the reward server's question about a token.
BEARER_ONLY = {"GET /api/v1/services/{service_id}/caller"}
# Routes refused by role before any lookup: every caller but a server admin gets this answer for every id.
SERVER_ADMIN_ONLY = {
    "PATCH /api/v1/users/{user_id}",
    "GET /api/v1/users/{user_id}/tokens",
    "DELETE /api/v1/users/{user_id}/tokens/{token_id}",
    "POST /admin/users/{user_id}/access",
}
_NO_ID = "takes no id: it answers about the caller's own things, or about no one's"
_TRAINER_DOOR = "the trainer's door: only the job's own job token opens it (a user token: 401 for every id)"
_POOL = "hosts and devices are one pool every team sees (GET /api/v1/hosts); managed by role, not by team"
_STATIC = "static files, no id"
_LISTS = "lists what the caller may see"
_CREATES = "creates in one of the caller's own teams (another team: 422 on `team`)"
_BY_ROLE = "server admins only, by role; no id"
EXEMPT = {
    "GET /metrics": "Prometheus counters of the whole server, no id",
    "GET /openapi.json": "the API's schema, the same for everyone",
    "GET /docs": "Swagger UI page, no id",
    "GET /redoc": "ReDoc page, no id",
    "MOUNT /static": _STATIC,
    "MOUNT /static/vendor/htmx": _STATIC,
    "MOUNT /static/vendor/pico": _STATIC,
    "MOUNT /static/vendor/redoc": _STATIC,
    "MOUNT /static/vendor/swagger-ui": _STATIC,
    "MOUNT /static/vendor/uplot": _STATIC,
    "GET /api/v1/health": "liveness for load balancers, no id",
    "GET /api/v1/spec/schema": "the job spec's JSON schema, the same for everyone",
    "POST /api/v1/ingest/{job_id}/metrics": _TRAINER_DOOR,
    "POST /api/v1/ingest/{job_id}/samples": _TRAINER_DOOR,
    "POST /api/v1/ingest/{job_id}/progress": _TRAINER_DOOR,
    "POST /api/v1/ingest/{job_id}/probe": _TRAINER_DOOR,
    "POST /api/v1/ingest/{job_id}/artifacts": _TRAINER_DOOR,
    "POST /api/v1/ingest/{job_id}/evaluation": _TRAINER_DOOR,
    "PATCH /api/v1/ingest/{job_id}/artifacts/{artifact_id}/upload": _TRAINER_DOOR,
    "POST /api/v1/ingest/{job_id}/artifacts/{artifact_id}/upload/complete": _TRAINER_DOOR,
    "POST /api/v1/hosts/{host_id}/drain": _POOL,
    "POST /api/v1/hosts/{host_id}/enable": _POOL,
    "POST /api/v1/hosts/{host_id}/disable": _POOL,
    "POST /api/v1/devices/{device_id}/disable": _POOL,
    "POST /api/v1/devices/{device_id}/enable": _POOL,
    "POST /api/v1/jobs": _CREATES,
    "GET /api/v1/jobs": _LISTS,
    "GET /api/v1/hosts": "the shared pool; another team's job on a device is shown as busy without its id",
    "POST /api/v1/tokens": _NO_ID,
    "GET /api/v1/tokens": _NO_ID,
    "GET /api/v1/users/me": _NO_ID,
    "POST /api/v1/users/me/password": _NO_ID,
    "GET /api/v1/users": _BY_ROLE,
    "POST /api/v1/users": _BY_ROLE,
    "GET /api/v1/teams": "lists the caller's teams",
    "POST /api/v1/teams": _BY_ROLE,
    "POST /api/v1/experiments": _CREATES,
    "GET /api/v1/experiments": _LISTS,
    "POST /api/v1/services": _CREATES,
    "GET /api/v1/services": _LISTS,
    "GET /api/v1/models": _LISTS,
    "POST /api/v1/models": "registers the job of its body: another team's job is refused as a missing one, 422 "
    "on `job_id` (tests/server/test_model_registry.py)",
    "GET /models": _LISTS,
    "GET /datasets": _LISTS,
    "POST /datasets": _CREATES,
    "POST /api/v1/datasets": _CREATES,
    "GET /api/v1/datasets": _LISTS,
    "POST /api/v1/advise": _CREATES,
    "GET /login": "the login page, before any session",
    "POST /login": "the login itself",
    "POST /logout": "ends the caller's own session",
    "GET /setup-password": "a signed one-time link names its user; no id to guess (a forged one is refused)",
    "POST /setup-password": "a signed one-time link names its user; no id to guess (a forged one is refused)",
    "GET /": "the caller's own jobs list",
    "GET /jobs": _LISTS,
    "GET /jobs/rows": _LISTS,
    "GET /submit": "the caller's own submit form",
    "POST /submit": _CREATES,
    "POST /advise": _CREATES,
    "GET /experiments/new": "the caller's own form",
    "GET /experiments/new/axis-row": "a row of the caller's own form",
    "POST /experiments/new/preview": "previews the caller's own form",
    "POST /experiments/new": _CREATES,
    "GET /experiments": _LISTS,
    "GET /experiments/rows": _LISTS,
    "GET /hosts": "the shared pool, as GET /api/v1/hosts",
    "GET /hosts/body": "the shared pool, as GET /api/v1/hosts",
    "GET /services": _LISTS,
    "POST /services": _CREATES,
    "GET /services/body": _LISTS,
    "GET /settings": _NO_ID,
    "POST /settings/tokens": _NO_ID,
    "POST /settings/password": _NO_ID,
    "GET /teams": "lists the caller's teams",
    "POST /teams": _BY_ROLE,
    "GET /admin/users": _BY_ROLE,
    "POST /admin/users": _BY_ROLE,
}
# A body that passes validation, so that the request reaches the lookup (JSON for the API, a form for pages).
BODIES: dict[str, dict[str, object]] = {
    "POST /api/v1/teams/{team_id}/members": {"username": "duo", "role": "member"},
    "PATCH /api/v1/teams/{team_id}/members/{user_id}": {"role": "viewer"},
    "PATCH /api/v1/users/{user_id}": {"disabled": True},
    "POST /api/v1/advice/{advice_id}/submit": {"executor": "native"},
    "POST /api/v1/experiments/{experiment_id}/notes": {"body": "a note"},
    "POST /experiments/{experiment_id}/notes": {"body": "a note"},
    "POST /api/v1/teams/{team_id}/webhooks": {"url": "https://hooks.example.com/hook"},
    "PUT /api/v1/models/{model_name}/aliases/{alias}": {"version": 1},
    "POST /models/{model_name}/aliases": {"alias": "candidate", "version": 1},
    "POST /jobs/{job_id}/register-model": {"name": "registered", "step": 1},
    "POST /api/v1/jobs/{job_id}/exports": {"format": "diffusers"},
    "POST /api/v1/jobs/{job_id}/evaluations": {
        "prompts": "builtin:shapes-heldout",
        "rewards": [{"name": "brightness"}],
    },
    "POST /api/v1/models/{model_name}/versions/{version}/evaluations": {
        "prompts": "builtin:shapes-heldout",
        "rewards": [{"name": "brightness"}],
    },
    "PATCH /api/v1/teams/{team_id}/artifact-storage": {"checkpoint_retention": 5},
    "POST /jobs/{job_id}/exports": {"format": "diffusers"},
    "POST /api/v1/jobs/{job_id}/playground": {"prompts": ["a cat"]},
    "POST /jobs/{job_id}/playground": {"prompts": "a cat"},
    "POST /api/v1/models/{model_name}/versions/{version}/playground": {"prompts": ["a cat"]},
    "POST /models/{model_name}/versions/{version}/playground": {"prompts": "a cat"},
}

ROUTES = assembled_routes()
CHECKED = [r for r in ROUTES if str(r) not in EXEMPT and (set(r.params) & set(OWNED) or "{" in QUERIES.get(str(r), ""))]


@dataclass
class Visitor:
    """A caller: API headers ({} for none), and a page client of their own with a session opened by the token."""

    name: str
    headers: Headers
    pages: TestClient
    csrf: str
    read_only: bool = False
    api_by_cookie: bool = False  # calls the API as the pages do, with the session cookie and no token

    @property
    def anonymous(self) -> bool:
        return not self.headers


@dataclass
class World:
    harness: Harness
    lab: TeamThings  # what the strangers ask for
    studio: TeamThings
    forge: TeamThings
    annex: TeamThings  # its team dissolved: every object teamless, owned by annex-admin
    strangers: list[Visitor] = field(default_factory=list)
    owners: dict[str, Visitor] = field(default_factory=dict)


def _visitor(
    harness: Harness, name: str, headers: Headers, read_only: bool = False, by_cookie: bool = False
) -> Visitor:
    pages = TestClient(harness.client.app)
    csrf = csrf_of(pages.get("/login").text)
    if headers:
        token = headers["Authorization"].removeprefix("Bearer ")
        login = pages.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False)
        assert login.status_code == 303, login.text
        csrf = csrf_of(pages.get("/settings").text)
    return Visitor(name, headers, pages, csrf, read_only, by_cookie)


def _dissolve(harness: Harness, team: str) -> None:
    """What removing a team does: its memberships go, and its jobs, experiments, services and advice stay with
    no team (their owners keep them)."""
    with harness.session() as session:
        session.execute(delete(Team).where(Team.name == team))
        session.commit()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, migrated_templates: dict[str, str]) -> Iterator[World]:
    root = tmp_path_factory.mktemp("route-table")
    shutil.copyfile(migrated_templates["sqlite"], root / "sfumato.db")
    settings = Settings(
        home=root / "home",
        database_url=f"sqlite:///{root / 'sfumato.db'}",
        artifact_root=root / "artifacts",
        secret_key=secrets.token_hex(32),
    )
    for harness in serve(settings):
        harness.add_host("cpu-1", device_type="cpu")
        world = World(harness, *(plant(harness, team) for team in ("lab", "studio", "forge", "annex")))
        duo = _visitor(harness, "a user in two other teams", harness.add_user("duo", "studio", "admin"))
        harness.join("duo", "forge", "admin")
        _dissolve(harness, "annex")
        world.strangers = [
            _visitor(harness, "another team's admin", world.studio.admin),
            _visitor(harness, "another team's member", world.studio.member),
            _visitor(harness, "another team's viewer", harness.add_user("studio-viewer", "studio", "viewer")),
            _visitor(harness, "a read token", harness.add_user("studio-reader", "studio", scope="read"), True),
            duo,
            _visitor(harness, "another team's page session", world.studio.member, by_cookie=True),
            _visitor(harness, "no token", {}),
        ]
        world.owners = {
            "lab": _visitor(harness, "lab's admin", world.lab.admin),
            "duo": duo,
            "annex": _visitor(harness, "the teamless things' owner", world.annex.admin),
            "annex-member": _visitor(harness, "the dissolved team's member", world.annex.member),
            "server admin": _visitor(harness, "a server admin", harness.admin),
        }
        yield world


def _url(route: AppRoute, ids: dict[str, int]) -> str:
    url = route.path.format(**{p: ids[p] for p in route.params})
    query = QUERIES.get(str(route))
    return f"{url}?{query.format(**ids)}" if query else url


def _call(harness: Harness, visitor: Visitor, route: AppRoute, ids: dict[str, int]) -> Response:
    url, body = _url(route, ids), BODIES.get(str(route), {})
    if route.is_page:
        if route.method == "GET":
            return visitor.pages.get(url, follow_redirects=False)
        form = {k: str(v) for k, v in body.items()} | {"csrf_token": visitor.csrf}
        return visitor.pages.request(route.method, url, data=form, follow_redirects=False)
    json = body if route.method != "GET" else None
    if visitor.api_by_cookie:
        return visitor.pages.request(route.method, url, json=json)
    return harness.client.request(route.method, url, json=json, headers=visitor.headers)


def _answer(response: Response, ids: dict[str, int], missing: dict[str, int]) -> tuple[int, str, str]:
    """Status, Location and body with the ids asked for written as {id}, to compare two answers; a page's
    numbers all written as # and its "ago" units dropped (a page may show durations that move on between two
    requests)."""
    html = response.headers.get("content-type", "").startswith("text/html")

    def normal(text: str) -> str:
        for value in {*ids.values(), *missing.values()}:
            text = re.sub(rf"(?<![\w.]){value}(?![\w.])", "{id}", text)
        if not html:
            return text
        return re.sub(r"# (s|min|h) ago", "# ago", re.sub(r"\d+", "#", text))  # "59 s ago" then "1 min ago"

    return response.status_code, normal(unquote(response.headers.get("location", ""))), normal(response.text)


def _refusals(visitor: Visitor, route: AppRoute) -> set[int]:
    """The statuses a visitor may get for another team's id (and must get for a missing one)."""
    if visitor.anonymous:
        return {303} if route.is_page else {401}
    if visitor.api_by_cookie and not route.is_page and (route.method != "GET" or str(route) in BEARER_ONLY):
        return {401}  # the API takes the cookie for reads only
    if str(route) in SERVER_ADMIN_ONLY:
        return {403}
    if str(route) in LEAVES_OUT:
        return {200}
    if visitor.read_only and route.method != "GET":
        return {403, 404}  # refused as read-only before or after the lookup
    return {404}


def test_every_route_is_checked_or_exempt_with_a_reason() -> None:
    names = {str(r) for r in ROUTES}
    unclassified = [str(r) for r in ROUTES if str(r) not in EXEMPT and r not in CHECKED]
    unknown = [str(r) for r in CHECKED if set(r.params) - set(OWNED)]
    assert unclassified == [] and unknown == [], "classify these routes: an id in OWNED, or EXEMPT with a reason"
    assert sorted(set(EXEMPT) - names) == [], "EXEMPT names routes the app no longer has"


def _mismatches(world: World, route: AppRoute, things: TeamThings, visitors: list[Visitor]) -> list[str]:
    missing = {p: MISSING_ID for p in OWNED}
    found = []
    for visitor in visitors:
        # The missing id is asked before and after the real one: a page may change between two requests for
        # reasons of its own (the visitor's token was just used), and the real id's answer must match either.
        before = _answer(_call(world.harness, visitor, route, missing), things.ids, missing)
        asked = _answer(_call(world.harness, visitor, route, things.ids), things.ids, missing)
        absent = _answer(_call(world.harness, visitor, route, missing), things.ids, missing)
        expected = _refusals(visitor, route)
        if asked not in (before, absent) or asked[0] not in expected:
            found.append(
                f"{route} {visitor.name}: {asked[0]} for {things.team}'s id, {absent[0]} for a missing one, "
                f"expected {expected} for both; {asked[2][:200]!r}"
            )
    return found


@pytest.mark.parametrize("route", CHECKED, ids=str)
def test_another_teams_id_gets_the_answer_of_a_missing_id(world: World, route: AppRoute) -> None:
    assert _mismatches(world, route, world.lab, world.strangers) == []


@pytest.mark.parametrize("route", CHECKED, ids=str)
def test_a_teamless_things_id_gets_the_answer_of_a_missing_id_from_all_but_its_owner(
    world: World, route: AppRoute
) -> None:
    others = [*world.strangers, world.owners["annex-member"], world.owners["lab"]]
    assert _mismatches(world, route, world.annex, others) == []


READS = [r for r in CHECKED if r.method == "GET"]


@pytest.mark.parametrize("route", READS, ids=str)
def test_the_owning_team_reads_its_own_things(world: World, route: AppRoute) -> None:
    reader = world.owners["server admin" if str(route) in SERVER_ADMIN_ONLY else "lab"]
    response = _call(world.harness, reader, route, world.lab.ids)
    assert response.status_code == 200, response.text[:300]


@pytest.mark.parametrize("route", [r for r in READS if str(r) not in SERVER_ADMIN_ONLY], ids=str)
def test_a_user_in_two_teams_reads_both_teams_things(world: World, route: AppRoute) -> None:
    answers = [_call(world.harness, world.owners["duo"], route, t.ids) for t in (world.studio, world.forge)]
    assert [a.status_code for a in answers] == [200, 200], [a.text[:300] for a in answers]


@pytest.mark.parametrize("route", [r for r in READS if set(r.params) <= {"job_id", "sample_id"}], ids=str)
def test_the_owner_of_a_teamless_job_still_reads_it(world: World, route: AppRoute) -> None:
    response = _call(world.harness, world.owners["annex"], route, world.annex.ids)
    assert response.status_code == 200, response.text[:300]
