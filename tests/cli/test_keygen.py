"""`sfumato keygen` prints a SFUMATO_SECRET_KEY that the server and the workers accept (issue 33, item 10)."""

from __future__ import annotations

from typer.testing import CliRunner

from server.secret_key import key_problem
from sfumato.cli import app


def test_sfumato_keygen_prints_a_new_key_each_time_that_the_server_accepts() -> None:
    keys = set()
    for _ in range(20):
        result = CliRunner().invoke(app, ["keygen"])
        assert result.exit_code == 0
        keys.add(result.output.strip())
    assert len(keys) == 20
    assert [key for key in keys if key_problem(key) is not None] == []
