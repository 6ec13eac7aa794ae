"""`python -m sfumato.cli ...`, the same as the `sfumato` entry point."""

from sfumato.cli import app

app()
