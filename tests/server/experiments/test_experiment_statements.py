"""How many SQL statements creating and reading an experiment sends: a fixed few, whatever its number of cells
(no query per cell), so that a 64-cell experiment is created and a 3 x 3 one summarised in a few round trips."""

from __future__ import annotations

from experiment_cells import create, run_cell
from server_harness import Harness
from sqlalchemy.engine import Engine
from statement_count import statements

CREATE_BOUND = 30  # 25 on 2026-11-30: auth, checks, one INSERT per table, the summary's reads
SUMMARY_BOUND = 20  # 15 on 2026-11-30: auth, the experiment, its jobs, one read per figure for all cells
ROW_INSERTS = ("INSERT INTO jobs ", "INSERT INTO job_events ", "INSERT INTO audit_events ")


def _engine(harness: Harness) -> Engine:
    return harness.client.app.state.sessionmaker.kw["bind"]


def _batched(harness: Harness, sent: list[str]) -> list[str]:
    """The statements but, on SQLite, the INSERTs of new rows, which SQLAlchemy sends one row at a time there:
    SQLite cannot return generated ids in the order of the rows (on PostgreSQL a batch is one INSERT)."""
    if _engine(harness).dialect.name != "sqlite":
        return sent
    return [s for s in sent if not s.startswith(ROW_INSERTS)]


def test_creating_a_64_cell_experiment_sends_a_bounded_number_of_statements(harness: Harness) -> None:
    harness.client.app.state.settings.max_queued_per_user = 1000
    harness.client.app.state.settings.max_queued_per_team = 1000
    with statements(_engine(harness)) as sent:
        body = create(harness, ("seed", list(range(64))))
    assert body["cell_count"] == 64
    assert len(_batched(harness, sent)) <= CREATE_BOUND, "\n".join(sent)


def test_the_summary_of_a_3_by_3_experiment_sends_a_bounded_number_of_statements(harness: Harness) -> None:
    host = harness.add_host("gpu-1", device_type="cpu", count=2)
    body = create(harness, ("executor.name", ["native", "lean_retain", "jagg"]), ("seed", [1, 2, 3]))
    for n, cell in enumerate(sorted(body["cells"], key=lambda c: c["position"])):
        run_cell(harness, cell["job_id"], host, 1.0 + n / 10)
    with statements(_engine(harness)) as sent:
        detail = harness.client.get(f"/api/v1/experiments/{body['id']}", headers=harness.admin).json()
    assert all(row["samples_per_s"] is not None for row in detail["summary"]["jobs"])
    assert len(_batched(harness, sent)) <= SUMMARY_BOUND, "\n".join(sent)
