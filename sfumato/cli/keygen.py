"""`sfumato keygen`: a SFUMATO_SECRET_KEY that the server and the workers accept."""

from __future__ import annotations

import typer


def keygen() -> None:
    """Print a new SFUMATO_SECRET_KEY: 32 random bytes, URL-safe base64, checked against the key-strength rule."""
    from server.secret_key import generate_key

    typer.echo(generate_key())
