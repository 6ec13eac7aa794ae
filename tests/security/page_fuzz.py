"""Property-based fuzz of the page routes (web/) against a live server on PostgreSQL.

The OpenAPI fuzz (openapi_fuzz.py) never sees the pages: they are not in the schema. This one takes every page
route of the app, logs in as the admin with a page session, and sends random path, query and form values,
every POST with the session's valid CSRF token (so the request reaches the route, not the CSRF check). Form
field names come from the forms the pages themselves render, plus random ones. A response of 500 or more is a
failure. Used by tests/security (a short run) and on its own for a long one:

    SFUMATO_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/postgres \\
        python tests/security/page_fuzz.py --examples 150
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from openapi_fuzz import ADMIN_TOKEN, FuzzReport, LiveServer, live_server  # noqa: E402

from server.config import Settings  # noqa: E402
from server.db import scratch_postgres_database  # noqa: E402
from sfumato.app import create_app  # noqa: E402

# The fuzz's logins come through "a proxy" (itself) from many addresses; see PageClient.send.
BEHIND_PROXY = {"SFUMATO_TRUSTED_PROXIES": "127.0.0.1"}
# Pages whose forms name the fields the POST routes read.
FORM_PAGES = ("/submit", "/settings", "/teams", "/teams/1", "/admin/users", "/jobs", "/login", "/services")
TEXT = st.text(max_size=40)
VALUE = st.one_of(
    TEXT,
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["", "0", "1", "-1", "true", "read", "write", "admin", "member", "viewer", "NaN", "1e999"]),
)


def page_routes() -> list[tuple[str, str, list[str]]]:
    """(method, path, declared query parameters) of every page route: the app's routes outside /api/."""
    with tempfile.TemporaryDirectory() as home:
        app = create_app(Settings(home=Path(home), database_url=f"sqlite:///{home}/routes.db"))
        found: list[tuple[str, str, list[str]]] = []

        def walk(routes: list[Any], prefix: str = "") -> None:
            for route in routes:
                if hasattr(route, "original_router"):
                    walk(route.original_router.routes, prefix + route.include_context.prefix)
                elif isinstance(route, APIRoute) and not (prefix + route.path).startswith("/api/"):
                    queries = [q.alias for q in route.dependant.query_params]
                    found.extend((m, prefix + route.path, queries) for m in sorted(route.methods & {"GET", "POST"}))

        walk(app.routes)
        return found


class PageClient:
    """An httpx client with the admin's page session; logs in again whenever a request ended the session."""

    def __init__(self, server: LiveServer) -> None:
        self.client = httpx.Client(base_url=server.url, timeout=30, follow_redirects=False)
        self.spare_token_id = server.spare_token_id
        self.csrf = ""
        self.login()

    def login(self) -> None:
        self.client.cookies.clear()
        self.csrf = _csrf(self.client.get("/login").text)
        answer = self.client.post("/login", data={"token": ADMIN_TOKEN, "csrf_token": self.csrf})
        assert answer.status_code == 303, answer.text[:300]
        self.csrf = _csrf(self.client.get("/settings").text)

    def send(self, method: str, url: str, form: dict[str, str], htmx: bool) -> httpx.Response:
        headers = {"HX-Request": "true"} if htmx else {}
        if url.startswith("/login"):  # each from an address of its own, so the fuzz never locks out its re-login
            headers["X-Forwarded-For"] = f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(256)}"
        if method == "POST":
            response = self.client.post(url, data={**form, "csrf_token": self.csrf}, headers=headers)
        else:
            response = self.client.get(url, headers=headers)
        ended = response.status_code in (303, 401) and "/login" in response.headers.get("location", "") + (
            response.headers.get("hx-redirect", "")
        )
        if ended or (method == "POST" and url.startswith("/logout")):
            self.login()
        return response


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match, html[:300]
    return match.group(1)


def form_field_names(pages: PageClient) -> list[str]:
    names: set[str] = set()
    for page in FORM_PAGES:
        names |= set(re.findall(r'name="([\w.\-\[\]]+)"', pages.client.get(page).text))
    return sorted(names - {"csrf_token", "csrf-token"})


def _fuzz_route(
    report: FuzzReport, pages: PageClient, route: tuple[str, str, list[str]], fields: list[str], examples: int
) -> None:
    method, path, queries = route
    params = re.findall(r"\{(\w+)\}", path)
    path_value = st.one_of(st.integers(min_value=-3, max_value=5).map(str), VALUE)
    # Revoking must not hit the token the fuzz logs in with: valid requests revoke a spare one.
    pinned = {"token_id": st.just(str(pages.spare_token_id))}

    @given(
        path_values=st.fixed_dictionaries({p: pinned.get(p, path_value) for p in params}),
        query=st.dictionaries(st.sampled_from([*queries, "x"]) if queries else st.just("x"), VALUE, max_size=4),
        form=st.dictionaries(st.one_of(st.sampled_from(fields), TEXT), VALUE, max_size=8),
        htmx=st.booleans(),
    )
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    def run(path_values: dict[str, str], query: dict[str, str], form: dict[str, str], htmx: bool) -> None:
        url = re.sub(r"\{(\w+)\}", lambda m: quote(path_values[m.group(1)], safe=""), path)
        if query:
            url += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in query.items())
        response = pages.send(method, url, form if method == "POST" else {}, htmx)
        report.requests += 1
        report.by_status[response.status_code] = report.by_status.get(response.status_code, 0) + 1
        if response.status_code >= 500:
            report.failures.append(f"{method} {url} {form}: {response.status_code} {response.text[:200]}")

    run()


def fuzz_pages(server: LiveServer, examples: int) -> FuzzReport:
    """`examples` random requests per page route and method; never raises on a bad answer."""
    report = FuzzReport()
    pages = PageClient(server)
    fields = form_field_names(pages)
    for route in page_routes():
        _fuzz_route(report, pages, route, fields, examples)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=150, help="requests per page route and method")
    args = parser.parse_args()
    server_url = os.environ.get("SFUMATO_TEST_POSTGRES_URL")
    if not server_url:
        print("SFUMATO_TEST_POSTGRES_URL is not set: the fuzz needs PostgreSQL")
        return 2
    with (
        scratch_postgres_database(server_url, "sfumato_page_fuzz") as database_url,
        tempfile.TemporaryDirectory() as home,
        live_server(database_url, Path(home), BEHIND_PROXY) as server,
    ):
        started = time.monotonic()
        report = fuzz_pages(server, args.examples)
        elapsed = time.monotonic() - started
        for failure in report.failures[:50]:
            print("FAIL", failure)
        print(f"page fuzz: {report.summary()} in {elapsed:.0f} s")
        for trace in server.log.read_text().split("Traceback (most recent call last):")[1:4]:
            print("server traceback:", trace[-3000:])
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
