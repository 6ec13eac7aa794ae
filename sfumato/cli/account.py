"""Client commands for the connection and the account: login, API tokens, and the worker hosts."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.table import Table

from sfumato import Client
from sfumato.cli.common import Connection, JsonOption, client, client_command, err, out, print_json, size, when
from sfumato.config import DEFAULT_URL, URL_ENV, read_config, write_config

token_app = typer.Typer(no_args_is_help=True, help="Your API tokens: create, list, revoke.")


@client_command
def login(
    url: Annotated[str | None, typer.Option(help="the server's URL")] = None,
    token: Annotated[str | None, typer.Option(help="an API token (asked for, hidden, when not given)")] = None,
) -> None:
    """Check a server URL and API token, then save them for the client (mode 0600)."""
    url = url or Connection.url or os.environ.get(URL_ENV) or read_config().get("url")
    if not url:
        url = typer.prompt("Sfumato server URL", default=DEFAULT_URL)
    token = token or Connection.token or typer.prompt("API token", hide_input=True)
    with Client(url, token) as api:
        api.check()
        path = write_config(api.url, token)
    out.print(f"logged in to {api.url}; saved in {path}", markup=False)


@client_command
def hosts(as_json: JsonOption = False) -> None:
    """Worker hosts, their devices, and which job holds each device."""
    found = client().hosts()
    if as_json:
        print_json([host.to_json() for host in found])
        return
    table = Table(box=None, header_style="bold")
    for column in ("HOST", "STATUS", "FREE", "DEVICES", "LAST HEARTBEAT"):
        table.add_column(column)
    for host in found:
        free = sum(1 for d in host.devices if d.enabled and not d.busy)
        devices = ", ".join(
            f"{d.device_type}:{d.index} {d.model}"
            + (f" {size(d.memory_bytes)}" if d.memory_bytes else "")
            + (f" [job {d.job_id}]" if d.job_id else " [busy]" if d.busy else "")
            + ("" if d.enabled else " (disabled)")
            for d in host.devices
        )
        table.add_row(host.name, host.status, f"{free}/{len(host.devices)}", devices, when(host.last_heartbeat_at))
    out.print(table)


@token_app.command("create")
@client_command
def token_create(
    name: Annotated[str, typer.Argument(help="what the token is for, e.g. ci-nightly")],
    scope: Annotated[str, typer.Option(help="write (submit, cancel) or read (look only)")] = "write",
    expires_days: Annotated[int | None, typer.Option(min=1, help="expire after this many days")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API token; its secret is printed this once."""
    created = client().create_token(name, scope=scope, expires_in_days=expires_days)
    if as_json:
        print_json(created.to_json())
        return
    err.print(f"token {created.id} ({created.name}, {created.scope}) created; it is shown this once:", markup=False)
    out.out(created.token or "")


@token_app.command("list")
@client_command
def token_list(as_json: JsonOption = False) -> None:
    """Your API tokens, without their secrets."""
    found = client().tokens()
    if as_json:
        print_json([t.to_json() for t in found])
        return
    table = Table(box=None, header_style="bold")
    for column in ("ID", "NAME", "SCOPE", "CREATED", "EXPIRES", "LAST USED", "REVOKED"):
        table.add_column(column)
    for t in found:
        table.add_row(
            str(t.id), t.name, t.scope, when(t.created_at), when(t.expires_at), when(t.last_used_at), when(t.revoked_at)
        )
    out.print(table)


@token_app.command("revoke")
@client_command
def token_revoke(token_id: Annotated[int, typer.Argument(help="the token's id (see `sfumato token list`)")]) -> None:
    """Revoke an API token: it is refused from now on."""
    client().revoke_token(token_id)
    out.print(f"token {token_id} revoked", markup=False)
