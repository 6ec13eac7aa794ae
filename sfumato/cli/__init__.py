"""The `sfumato` command: the platform's processes (up, server, worker, scheduler, db, reward-server, keygen) and the
client commands (login, submit, jobs, show, logs, cancel, retry, compare, export, download, advise, advice, token,
hosts, experiment, service, eval)."""

from __future__ import annotations

from collections.abc import Callable

import typer

from sfumato.cli import (
    account,
    advise,
    artifacts,
    evaluations,
    experiments,
    jobs,
    keygen,
    playground,
    processes,
    reward_server,
    services,
)
from sfumato.cli.common import connection_options
from sfumato.cli.datasets import dataset_app
from sfumato.cli.registry import model_app

PLATFORM_COMMANDS: tuple[Callable[..., None], ...] = (
    processes.up,
    processes.server,
    processes.worker,
    processes.scheduler,
    reward_server.reward_server,
    keygen.keygen,
)
JOB_COMMANDS: tuple[Callable[..., None], ...] = (
    jobs.submit,
    jobs.jobs,
    jobs.show,
    jobs.logs,
    jobs.cancel,
    jobs.retry,
    jobs.compare,
    jobs.export,
    artifacts.download,
    advise.advise,
    advise.advice,
    playground.playground,
)

app = typer.Typer(name="sfumato", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
app.callback()(connection_options)

for command in PLATFORM_COMMANDS:
    app.command(rich_help_panel="Platform")(command)
app.add_typer(processes.db_app, name="db", rich_help_panel="Platform")

app.command(rich_help_panel="Client")(account.login)
for command in JOB_COMMANDS:
    app.command(rich_help_panel="Client")(command)
app.add_typer(account.token_app, name="token", rich_help_panel="Client")
app.add_typer(experiments.experiment_app, name="experiment", rich_help_panel="Client")
app.add_typer(evaluations.eval_app, name="eval", rich_help_panel="Client")
app.command(rich_help_panel="Client")(account.hosts)
app.add_typer(services.service_app, name="service", rich_help_panel="Client")
app.add_typer(model_app, name="model", rich_help_panel="Client")
app.add_typer(dataset_app, name="dataset", rich_help_panel="Client")
