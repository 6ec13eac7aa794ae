"""The platform's processes: the embedded platform (`up`) and each process on its own.

Every command reads the same SFUMATO_* settings; with none set it runs on the embedded defaults
(SQLite, a broker on SQLite, artifacts under ./var). Server modules are imported inside the commands,
so the client commands of the same `sfumato` entry point run without the server's dependencies.
"""

from __future__ import annotations

import copy
import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from server.config import Settings

db_app = typer.Typer(no_args_is_help=True, help="The database schema.")

console = Console(stderr=True)

# Seconds `up` waits after the worker's trainers had their own grace period, before SIGKILL.
STOP_MARGIN_SECONDS = 15.0

# uvicorn's access line with the serving process's id in brackets, e.g. `INFO:     [4242] 127.0.0.1:5 - "GET /" 200`.
ACCESS_LOG_FORMAT = '%(levelprefix)s [%(process)d] %(client_addr)s - "%(request_line)s" %(status_code)s'


def _migrate(settings: Settings) -> None:
    from server.migrate import ensure_sqlite_folder, upgrade

    url = settings.resolved_database_url()
    ensure_sqlite_folder(url)
    upgrade(url)


def _bootstrap(settings: Settings) -> str | None:
    """Schema up to date, and the admin user and token exist; returns the token when it is new (to print once)."""
    from server.db import session_scope
    from server.services.auth import ensure_admin

    _migrate(settings)
    with session_scope() as session:
        token = ensure_admin(session, settings)
    if token is None:
        if settings.admin_token:
            console.print("accepting the admin token from SFUMATO_ADMIN_TOKEN")
        else:
            console.print("the admin exists already; use its token (or set SFUMATO_ADMIN_TOKEN)")
    return token


def _first_password_link(settings: Settings) -> str | None:
    """The admin's one-time setup link while it has no password (server.services.password_setup), else None."""
    from server.db import session_scope
    from server.secret_key import session_secret_key
    from server.services.password_setup import first_password_link

    with session_scope() as session:
        return first_password_link(session, session_secret_key(settings))


def _print_setup_link(link: str, url: str) -> None:
    """The admin's setup link, set apart like the token: the only way to give the admin a first password."""
    from server.services.password_setup import SETUP_LINK_HOURS

    rule = "─" * 72
    console.print(f"\n{rule}\n[bold]admin has no password; set one (link works once, for {SETUP_LINK_HOURS} h):[/bold]")
    console.print(f"{url}{link}\n{rule}\n", soft_wrap=True, markup=False, highlight=False)


def _print_token(token: str, url: str) -> None:
    """The admin token, set apart from the other processes' output so that it is not missed."""
    rule = "─" * 72
    console.print(f"\n{rule}\n[bold]admin API token (shown once):[/bold] {token}", soft_wrap=True)
    console.print(f"log in at {url}/login with it, or: sfumato login --url {url}\n{rule}\n", soft_wrap=True)


def _wait_until_ready(settings: Settings, url: str, children: list[_Child], stop: threading.Event) -> bool:
    """True once the server answers GET /api/v1/health and this machine's worker has registered its host (its
    start-up banner is printed by then); False when a child ended or a stop was asked first."""
    import httpx
    from sqlalchemy import select

    from server.db import session_scope
    from server.models import Host
    from worker.host_agent import host_name

    name = host_name(settings)
    while not stop.is_set() and all(c.proc is None or c.proc.poll() is None for c in children):
        with session_scope() as session:
            registered = session.scalar(select(Host.id).where(Host.name == name, Host.status == "online"))
        try:
            answers = httpx.get(f"{url}/api/v1/health", timeout=2).is_success
        except httpx.HTTPError:
            answers = False
        if registered is not None and answers:
            return True
        stop.wait(0.5)
    return False


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring the database to the latest schema."""
    from server.config import get_settings

    _migrate(get_settings())
    console.print("database schema is up to date")


def _require_secret_key(settings: Settings) -> None:
    """Checked before anything starts: the server signs page sessions with the key, the worker the node tokens
    of multi-node jobs. On the embedded platform this makes the state folder's key, which every process then
    reads, so each accepts what the others signed."""
    from server.secret_key import WeakSecretKey, session_secret_key

    try:
        session_secret_key(settings)
    except WeakSecretKey as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def server(
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
    workers: int = typer.Option(
        0, min=0, envvar="SFUMATO_SERVER_WORKERS", help="server processes; 0: one per CPU core"
    ),
    bootstrap: bool = typer.Option(
        False, "--bootstrap", help="first upgrade the schema and create the admin (printing its token once)"
    ),
) -> None:
    """The web server and REST API (uvicorn, one process per CPU core by default)."""
    from server.observability.metrics_dir import shared_metrics_dir

    # First, before anything imports prometheus_client: every uvicorn process counts into one folder.
    with shared_metrics_dir():
        _serve(host, port, workers, bootstrap)


def _access_log_with_pid() -> dict[str, Any]:
    """uvicorn's logging, with the process that served each request in its access line."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["access"]["fmt"] = ACCESS_LOG_FORMAT
    return config


def _serve(host: str, port: int, workers: int, bootstrap: bool) -> None:
    import uvicorn

    from server.config import get_settings

    settings = get_settings()
    _require_secret_key(settings)
    if bootstrap:
        token = _bootstrap(settings)
        link = _first_password_link(settings)
        if token:
            _print_token(token, _public_url(host, port))
        if link:
            _print_setup_link(link, _public_url(host, port))
    processes = workers or os.cpu_count() or 1
    uvicorn.run(
        "sfumato.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=processes,
        log_level="info",
        log_config=_access_log_with_pid(),
        # The app believes X-Forwarded-For from SFUMATO_TRUSTED_PROXIES only; uvicorn's own handling would
        # believe it from any local client (its default trusts 127.0.0.1) and rewrite the address first.
        proxy_headers=False,
    )


def worker(
    concurrency: int | None = typer.Option(None, help="jobs at once; default: the host's device count"),
    loglevel: str = typer.Option("info", help="Celery log level"),
) -> None:
    """The Celery worker of this host: registers its devices and runs the jobs sent to its queue."""
    from server.config import get_settings
    from server.services.hosts import host_queue
    from server.services.notification_queue import NOTIFICATIONS_QUEUE
    from worker.celery_app import app as celery_app
    from worker.host_agent import detect_devices, host_name

    settings = get_settings()
    _require_secret_key(settings)
    name = host_name(settings)
    slots = concurrency or len(detect_devices(settings))
    celery_app.worker_main(
        [
            "worker",
            "--pool", "threads",  # a job task waits on its trainer for minutes; threads are enough
            "--concurrency", str(slots),
            "--queues", f"{host_queue(name)},{NOTIFICATIONS_QUEUE}",  # webhooks: any worker delivers
            "--hostname", f"sfumato@{name}",
            "--without-gossip",
            "--without-mingle",
            "--loglevel", loglevel,
        ]
    )  # fmt: skip


def scheduler() -> None:
    """The scheduler loop: places queued jobs on free devices and notices lost hosts."""
    from server.config import get_settings
    from server.db import get_sessionmaker
    from server.services.notification_queue import DELIVER_WEBHOOK_TASK, NOTIFICATIONS_QUEUE, run_notification_sender
    from server.services.placement_pass import NodeTask
    from server.services.reward_reachability import run_reward_prober
    from server.services.scheduler import RUN_JOB_TASK, run_scheduler
    from server.services.scheduler_wakeup import SchedulerWakeup
    from server.services.service_placement import RUN_SERVICE_TASK, ServiceTask
    from worker.celery_app import app as celery_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s scheduler %(levelname)s %(message)s")
    settings = get_settings()
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def dispatch(task: NodeTask | ServiceTask) -> None:
        name = RUN_SERVICE_TASK if isinstance(task, ServiceTask) else RUN_JOB_TASK
        celery_app.send_task(name, kwargs=task.task_kwargs(), queue=task.queue)

    def send_delivery(delivery_id: int) -> None:
        celery_app.send_task(DELIVER_WEBHOOK_TASK, kwargs={"delivery_id": delivery_id}, queue=NOTIFICATIONS_QUEUE)

    threading.Thread(  # webhook deliveries written by job ends and test buttons, handed to the workers
        target=run_notification_sender, args=(get_sessionmaker(), send_delivery, stop), name="webhooks", daemon=True
    ).start()
    if settings.remote_reward_probe:  # the submit's remote reward probes, answered beside the passes
        threading.Thread(
            target=run_reward_prober, args=(get_sessionmaker(), settings, stop), name="reward-prober", daemon=True
        ).start()
    run_scheduler(
        get_sessionmaker(),
        dispatch,
        settings.scheduler_interval_seconds,
        settings.host_lost_after_seconds,
        SchedulerWakeup(settings.resolved_database_url(), stop),
    )


@dataclass
class _Child:
    name: str
    argv: list[str]
    grace_seconds: float
    proc: subprocess.Popen[bytes] | None = None


def _stop_children(children: list[_Child]) -> None:
    """SIGTERM every child's process group, wait for each within its grace, then SIGKILL."""
    from worker.supervisor import signal_group

    running = [c for c in children if c.proc is not None and c.proc.poll() is None]
    for child in running:
        assert child.proc is not None
        signal_group(child.proc, signal.SIGTERM)
    for child in running:
        assert child.proc is not None
        try:
            child.proc.wait(timeout=child.grace_seconds)
        except subprocess.TimeoutExpired:
            console.print(f"{child.name} did not stop within {child.grace_seconds:g} s; killing it")
        signal_group(child.proc, signal.SIGKILL)
        child.proc.wait()


def _public_url(host: str, port: int) -> str:
    reachable = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{reachable}:{port}"


def up(
    host: str = typer.Option("127.0.0.1", help="address the server listens on"),
    port: int = typer.Option(8000, help="port the server listens on"),
) -> None:
    """The whole platform in the foreground: server, scheduler and one worker. Ctrl-C stops it all."""
    from server.config import get_settings
    from trainer.spec.destinations import PRIVATE_URLS_SETTING
    from worker.exporter_port import ANY_PORT_IF_TAKEN_ENV, ExporterSettings
    from worker.supervisor import terminate_with_parent

    # The children inherit these: one absolute state folder, and the URL trainers report to.
    os.environ["SFUMATO_HOME"] = str(get_settings().home.resolve())
    os.environ.setdefault("SFUMATO_PUBLIC_URL", _public_url(host, port))
    # Reward servers of the embedded platform run on this machine: its loopback and LAN are allowed here only.
    os.environ.setdefault(PRIVATE_URLS_SETTING, "true")
    # The worker's exporter moves off a default port that another platform on this machine holds.
    if not ExporterSettings().port_configured():
        os.environ.setdefault(ANY_PORT_IF_TAKEN_ENV, "true")
    get_settings.cache_clear()
    settings = get_settings()

    token = _bootstrap(settings)
    link = _first_password_link(settings)

    me = [sys.executable, "-m", "sfumato.cli"]
    children = [
        _Child("server", [*me, "server", "--host", host, "--port", str(port)], grace_seconds=STOP_MARGIN_SECONDS),
        _Child("scheduler", [*me, "scheduler"], grace_seconds=STOP_MARGIN_SECONDS),
        _Child("worker", [*me, "worker"], grace_seconds=settings.cancel_grace_seconds + STOP_MARGIN_SECONDS),
    ]
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        console.print(f"{signal.Signals(signum).name}: stopping")
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    exit_code = 0
    try:
        for child in children:
            # Own process groups: Ctrl-C reaches only this process, which stops the children in order.
            child.proc = subprocess.Popen(child.argv, start_new_session=True, preexec_fn=terminate_with_parent)
        # The banner only once the API answers: a restart's server takes seconds before it does.
        if _wait_until_ready(settings, _public_url(host, port), children, stop):
            console.print(f"Sfumato is up at {_public_url(host, port)} (Ctrl-C stops it)")
        if token:
            _print_token(token, _public_url(host, port))
        if link:
            _print_setup_link(link, _public_url(host, port))
        while not stop.is_set():
            ended = [c for c in children if c.proc is not None and c.proc.poll() is not None]
            if ended:
                for child in ended:
                    console.print(f"{child.name} exited with code {child.proc.returncode if child.proc else '?'}")
                exit_code = 1
                break
            stop.wait(0.5)
    finally:
        # The server stops last, so a trainer's final reports still arrive while the worker stops it.
        _stop_children([c for c in children if c.name != "server"])
        _stop_children([c for c in children if c.name == "server"])
    raise typer.Exit(exit_code)
