"""``make bench-artifacts``: the upload of a 100 MB artifact and `sfumato download` of it, timed.

A `sfumato server` on a fresh SQLite platform in a temporary folder (artifact store: the default folder). A job is
submitted and marked running with a job token, as a worker would; the trainer's reporter registers its `model/`
folder (100 MB of random bytes in 4 files: a tar stream of 100 MB) and uploads it in 8 MiB chunks. Then
`sfumato download JOB --kind model --out DIR` runs as a user would, `--rounds` times into a fresh folder (a fresh
process each: start-up, listing, download, SHA-256 check, unpacking), and once more resuming a download cut at
half (its `.part` file holding the first half). Everything runs on this machine, over loopback.

Writes bench/results/artifacts.md. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy.orm import Session  # noqa: E402

from server.config import Settings  # noqa: E402
from server.db import make_engine  # noqa: E402
from server.migrate import upgrade  # noqa: E402
from server.models import Job, JobStatus  # noqa: E402
from server.services.auth import ensure_admin  # noqa: E402
from server.services.job_status import set_status  # noqa: E402
from server.services.tokens import JOB_TOKEN_PREFIX, hash_token, new_token  # noqa: E402
from trainer.reporting.reporter import Reporter  # noqa: E402

RESULTS = REPO / "bench" / "results" / "artifacts.md"
MB = 1_000_000


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(home: Path, token: str) -> tuple[subprocess.Popen[bytes], str]:
    database_url = f"sqlite:///{home / 'sfumato.db'}"
    upgrade(database_url)
    engine = make_engine(database_url)
    with Session(engine) as session:
        ensure_admin(session, Settings(home=home, database_url=database_url, admin_token=token))
    engine.dispose()
    port = free_port()
    env = {**os.environ, "SFUMATO_HOME": str(home), "SFUMATO_DATABASE_URL": database_url,
           "SFUMATO_SECRET_KEY": secrets.token_hex(32)}  # fmt: skip
    log = (home / "server.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "sfumato.cli", "server", "--port", str(port)], env=env,
                              stdout=log, stderr=log, cwd=REPO)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=2).is_success:
                return server, url
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not answer; see {home / 'server.log'}")


def running_job(url: str, token: str, home: Path) -> tuple[int, str]:
    """A job submitted through the API and marked running with a fresh job token, as the worker does."""
    spec = (REPO / "examples" / "tiny-native.json").read_text()
    answer = httpx.post(f"{url}/api/v1/jobs", content=spec, headers={"Authorization": f"Bearer {token}"})
    answer.raise_for_status()
    job_id = int(answer.json()["id"])
    raw = new_token(JOB_TOKEN_PREFIX)
    engine = make_engine(f"sqlite:///{home / 'sfumato.db'}")
    with Session(engine) as session:
        job = session.get_one(Job, job_id)
        job.attempt = 1
        set_status(session, job, JobStatus.SCHEDULED)
        set_status(session, job, JobStatus.RUNNING)
        job.token_hash = hash_token(raw)
        session.commit()
    engine.dispose()
    return job_id, raw


def write_model(folder: Path, total_bytes: int, files: int = 4) -> None:
    folder.mkdir(parents=True)
    for index in range(files):
        (folder / f"part-{index}.safetensors").write_bytes(os.urandom(total_bytes // files))


def sfumato_download(env: dict[str, str], job_id: int, out: Path) -> float:
    argv = [sys.executable, "-m", "sfumato.cli", "download", str(job_id), "--kind", "model", "--out", str(out)]
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True, cwd=REPO)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100, help="the artifact's size in MB (10^6 bytes)")
    parser.add_argument("--rounds", type=int, default=5, help="downloads timed (median reported)")
    args = parser.parse_args()
    size = args.megabytes * MB
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-artifacts-") as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        token = new_token("sfu_")
        server, url = start_server(home, token)
        try:
            job_id, job_token = running_job(url, token, home)
            output_dir = Path(scratch) / "trainer-out"
            write_model(output_dir / "model", size)
            reporter = Reporter(output_dir, url, str(job_id), 1, job_token)
            started = time.perf_counter()
            reporter.artifact("model", "model", 1, "model")
            reporter.close()
            upload_s = time.perf_counter() - started
            client_env = {**{k: v for k, v in os.environ.items() if not k.startswith("SFUMATO_")},
                          "SFUMATO_URL": url, "SFUMATO_TOKEN": token, "HOME": scratch}  # fmt: skip
            times = []
            for round_index in range(args.rounds):
                times.append(sfumato_download(client_env, job_id, Path(scratch) / f"download-{round_index}"))
            [artifact] = httpx.get(f"{url}/api/v1/jobs/{job_id}/artifacts",
                                   headers={"Authorization": f"Bearer {token}"}).json()["items"]  # fmt: skip
            resumed_dir = Path(scratch) / "resumed"
            resumed_dir.mkdir()
            whole = httpx.get(f"{url}/api/v1/jobs/{job_id}/artifacts/{artifact['id']}/download",
                              headers={"Authorization": f"Bearer {token}"}, timeout=120).content  # fmt: skip
            (resumed_dir / f".sfumato-{job_id}-{artifact['id']}.part").write_bytes(whole[: len(whole) // 2])
            resumed_s = sfumato_download(client_env, job_id, resumed_dir)
            same = all(
                (Path(scratch) / "download-0" / "model" / p.name).read_bytes() == p.read_bytes()
                for p in (output_dir / "model").iterdir()
            )
        finally:
            server.terminate()
            server.wait(30)
            shutil.rmtree(home, ignore_errors=True)
    median = statistics.median(times)
    stream_mb = artifact["size_bytes"] / MB
    lines = [
        "# Artifact upload and `sfumato download` (`make bench-artifacts`)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}: {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, load average {load_before:.1f} at the start and {os.getloadavg()[0]:.1f} at "
        "the end. One `sfumato server` (SQLite, the default folder store) and the client on the same machine, over "
        "loopback."
        + (
            " The machine was not quiet (a load above its CPU count): other processes shared its "
            "cores, so these times are upper bounds."
            if load_before > (os.cpu_count() or 1)
            else ""
        ),
        "",
        f"The artifact: a `model/` folder of {args.megabytes} MB of random bytes in 4 files, sent as one tar stream "
        f"of {stream_mb:.1f} MB (sha256 `{artifact['sha256'][:16]}...`).",
        "",
        "| what | seconds | MB/s |",
        "|---|---|---|",
        f"| upload by the trainer's reporter (register, 8 MiB chunks, SHA-256 check) | {upload_s:.2f} | "
        f"{stream_mb / upload_s:.0f} |",
        f"| `sfumato download JOB --kind model`, median of {args.rounds} (each a new process: list, download, "
        f"check, unpack) | {median:.2f} | {stream_mb / median:.0f} |",
        f"| the same, fastest / slowest | {min(times):.2f} / {max(times):.2f} | |",
        f"| the same, resuming a download cut at half (Range) | {resumed_s:.2f} | |",
        "",
        f"Every round: {', '.join(f'{t:.2f}' for t in times)} s. The files unpacked are the files uploaded: "
        f"{'yes' if same else 'NO'}.",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
