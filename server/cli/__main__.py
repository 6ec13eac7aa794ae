"""`python -m server.cli ...`, the same as the `sfumato` entry point."""

from server.cli import app

app()
