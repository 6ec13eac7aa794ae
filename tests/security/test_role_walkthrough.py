"""Two teams, three users, tokens of each role: each role does exactly what its row of the matrix says.

| role (team lab) | read | submit | cancel own | cancel other's | manage members | audit | hosts  |
| viewer (vera)   | yes  | no     | —          | no             | no             | no    | no     |
| member (max)    | yes  | yes    | yes        | no             | no             | no    | no     |
| admin (ada)     | yes  | yes    | yes        | yes            | yes            | yes   | manage |
| read-only token | yes  | no     | no         | no             | no             | read  | no     |

vera is also the admin of team studio: a role belongs to a membership, not to a user.
"""

from __future__ import annotations

from server_harness import Harness, Headers, bearer

from server.models import ApiToken
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token


def _user(harness: Harness, username: str, team_id: int, role: str) -> Headers:
    """Created by the server admin through the API; the user then makes their own token (bootstrap by DB)."""
    response = harness.client.post(
        "/api/v1/users", json={"username": username, "team_id": team_id, "role": role}, headers=harness.admin
    )
    assert response.status_code == 201, response.text
    with harness.session() as session:
        raw = new_token(USER_TOKEN_PREFIX)
        session.add(ApiToken(user_id=response.json()["id"], name="first", token_hash=hash_token(raw)))
        session.commit()
    return bearer(raw)


def _team(harness: Harness, name: str) -> int:
    response = harness.client.post("/api/v1/teams", json={"name": name}, headers=harness.admin)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_each_role_does_exactly_what_its_row_says(harness: Harness) -> None:
    c = harness.client
    lab, studio = _team(harness, "lab"), _team(harness, "studio")
    ada = _user(harness, "ada", lab, "admin")
    max_ = _user(harness, "max", lab, "member")
    vera = _user(harness, "vera", lab, "viewer")
    vera_in_studio = {"username": "vera", "role": "admin"}
    assert c.post(f"/api/v1/teams/{studio}/members", json=vera_in_studio, headers=harness.admin).status_code == 201
    ada_read = bearer(c.post("/api/v1/tokens", json={"name": "ro", "scope": "read"}, headers=ada).json()["token"])
    harness.add_host("cpu-1", device_type="cpu", count=2)

    # submit: member and admin yes, viewer and read-only token no (and nothing is stored).
    count = harness.job_count()
    assert harness.submit({"name": "v"}, headers=vera, team="lab").status_code == 403
    assert harness.submit({"name": "r"}, headers=ada_read).status_code == 403
    assert harness.job_count() == count
    max_job = harness.submit_ok({"name": "max's"}, headers=max_)
    ada_job = harness.submit_ok({"name": "ada's"}, headers=ada)
    studio_job = harness.submit({"name": "vera's"}, headers=vera, team="studio")
    assert studio_job.status_code == 201

    # read: every role of lab sees lab's jobs; studio's job stays studio's.
    for who in (vera, max_, ada, ada_read):
        assert c.get(f"/api/v1/jobs/{max_job}", headers=who).status_code == 200
    assert c.get(f"/api/v1/jobs/{studio_job.json()['id']}", headers=max_).status_code == 404
    assert {j["name"] for j in c.get("/api/v1/jobs", headers=max_).json()["items"]} == {"max's", "ada's"}

    # cancel: viewer no; member not another's, but their own; admin any of the team's; read token never.
    assert c.post(f"/api/v1/jobs/{max_job}/cancel", headers=vera).status_code == 403
    assert c.post(f"/api/v1/jobs/{ada_job}/cancel", headers=max_).status_code == 403
    assert c.post(f"/api/v1/jobs/{max_job}/cancel", headers=ada_read).status_code == 403
    assert c.post(f"/api/v1/jobs/{max_job}/cancel", headers=max_).status_code == 200
    assert c.post(f"/api/v1/jobs/{max_job}/retry", headers=max_).status_code == 200
    assert c.post(f"/api/v1/jobs/{max_job}/cancel", headers=ada).status_code == 200
    assert c.post(f"/api/v1/jobs/{max_job}/retry", headers=vera).status_code == 403

    # members and audit: only the admin manages; every member may list the members.
    add = {"role": "member"}
    for who in (vera, max_, ada_read):
        response = c.patch(f"/api/v1/teams/{lab}/members/{_id(harness, 'vera')}", json=add, headers=who)
        assert response.status_code == 403
        assert c.get(f"/api/v1/teams/{lab}/audit", headers=who).status_code == (200 if who is ada_read else 403)
    assert len(c.get(f"/api/v1/teams/{lab}/members", headers=vera).json()["items"]) == 3
    promoted = c.patch(f"/api/v1/teams/{lab}/members/{_id(harness, 'vera')}", json={"role": "member"}, headers=ada)
    assert promoted.status_code == 200 and promoted.json()["role"] == "member"
    assert c.delete(f"/api/v1/teams/{lab}/members/{_id(harness, 'ada')}", headers=ada).status_code == 409  # last admin

    # hosts: a team admin manages them, a member does not; only server admins create users and teams.
    host_id = c.get("/api/v1/hosts", headers=max_).json()["items"][0]["id"]
    assert c.post(f"/api/v1/hosts/{host_id}/drain", headers=max_).status_code == 403
    assert c.post(f"/api/v1/hosts/{host_id}/drain", headers=ada_read).status_code == 403
    assert c.post(f"/api/v1/hosts/{host_id}/drain", headers=ada).status_code == 200
    assert c.post("/api/v1/users", json={"username": "eve"}, headers=ada).status_code == 403
    assert c.post("/api/v1/teams", json={"name": "eve"}, headers=ada).status_code == 403
    assert c.get("/api/v1/users", headers=ada).status_code == 403

    # the audit log tells who did what, newest first, for team lab only.
    events = c.get(f"/api/v1/teams/{lab}/audit", headers=ada).json()["items"]
    trail = [(e["action"], e["actor"]) for e in reversed(events)]
    assert ("job.submit", "max") in trail and ("job.cancel", "ada") in trail and ("job.retry", "max") in trail
    assert ("member.role", "ada") in trail and ("token.create", "ada") in trail
    assert all(e["job_id"] != studio_job.json()["id"] for e in events)


def _id(harness: Harness, username: str) -> int:
    users = harness.client.get("/api/v1/users", headers=harness.admin).json()["items"]
    return int(next(u["id"] for u in users if u["username"] == username))
