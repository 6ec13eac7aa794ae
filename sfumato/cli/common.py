"""What the client commands share: the connection options, output helpers, and one-line errors.

Client commands import `sfumato` only (never the server's modules), so they run on a laptop that has
nothing but the client's dependencies.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from sfumato import Client, SfumatoError

# Piped output is not cut to 80 columns: tables keep whole names for grep and scripts.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 400)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOption = Annotated[bool, typer.Option("--json", help="print JSON for scripts instead of a table")]

P = ParamSpec("P")
R = TypeVar("R")


class Connection:
    """`--url` / `--token` given before the command; the client resolves what is left from the
    environment and the config file."""

    url: str | None = None
    token: str | None = None


def connection_options(
    url: Annotated[
        str | None, typer.Option("--url", help="server URL for client commands (default: SFUMATO_URL, then login)")
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", help="API token for client commands (default: SFUMATO_TOKEN, then login)")
    ] = None,
) -> None:
    """Sfumato: RL fine-tuning of diffusion models."""
    Connection.url, Connection.token = url, token


def client() -> Client:
    return Client(Connection.url, Connection.token)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one line on stderr; raise the returned Exit."""
    err.print(f"error: {message}", markup=False)
    return typer.Exit(code)


def client_command(func: Callable[P, R]) -> Callable[P, R]:
    """Turn the client's errors and Ctrl-C into one line on stderr and a non-zero exit, never a traceback."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SfumatoError as exc:
            raise fail(str(exc)) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None

    return run


def print_json(data: Any) -> None:
    out.out(json.dumps(data, indent=2, default=str))


def number(value: float | None, digits: int = 4) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.{digits}g}"


def times(value: float | None) -> str:
    """A speedup or bound as the compare page shows it: 1.60 and a multiplication sign."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.2f}\u00d7"


def duration(seconds: float | None) -> str:
    """As the pages show it: '45 s', '12 min 03 s', '2 h 05 min'."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def size(value: float | None) -> str:
    """Bytes as a short human size: 1.5 GiB."""
    if value is None:
        return "-"
    units, exponent = ("B", "KiB", "MiB", "GiB", "TiB"), 0
    while abs(value) >= 1024 and exponent < len(units) - 1:
        value, exponent = value / 1024, exponent + 1
    return f"{value:.0f} B" if exponent == 0 else f"{value:.1f} {units[exponent]}"


def steps(done: int, total: int) -> str:
    return f"{done}/{total or '?'}"


def when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else "-"
