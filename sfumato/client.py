"""The Python client of the Sfumato REST API: submit, follow, compare and export jobs from a script or a
notebook. Needs only httpx, pydantic and pyyaml (pandas for `metrics_frame`, pyarrow for parquet).

    from sfumato import Client
    client = Client()                      # SFUMATO_URL / SFUMATO_TOKEN, or `sfumato login`'s config
    job = client.submit("examples/tiny-native.json", overrides=["algorithm.group_size=8"])
    job = client.wait(job.id, timeout=600)
    reward = client.metrics(job.id, ["reward/mean"])["reward/mean"]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from sfumato.advice_client import AdviceCalls
from sfumato.artifact_download import download_artifact_to
from sfumato.config import resolve_credentials
from sfumato.dataset_client import DatasetCalls
from sfumato.errors import (
    ConfigError,
    ConnectionFailed,
    MissingDependency,
    WaitTimeout,
    api_error,
    response_detail,
)
from sfumato.evaluation_client import EvaluationCalls
from sfumato.experiment_client import ExperimentCalls
from sfumato.export_client import ExportCalls
from sfumato.model_client import ModelCalls
from sfumato.models import ApiToken, Artifact, Comparison, Host, Job, LogLine, MetricSeries, Sample
from sfumato.playground_client import PlaygroundCalls
from sfumato.reward_services import RewardService
from sfumato.specfile import apply_overrides, read_spec_file

if TYPE_CHECKING:
    import pandas

API = "/api/v1"
# The server's limits: keys per metrics request, and steps per series.
MAX_KEYS_PER_REQUEST = 64
MAX_POINTS = 100_000


class Client(ExperimentCalls, AdviceCalls, PlaygroundCalls, EvaluationCalls, ModelCalls, ExportCalls, DatasetCalls):
    """A connection to one Sfumato server with one API token."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 30.0) -> None:
        credentials = resolve_credentials(url, token)
        if not credentials.token:
            raise ConfigError("no API token: pass token=, set SFUMATO_TOKEN, or run `sfumato login`")
        self.url = credentials.url
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {credentials.token}", "User-Agent": "sfumato-client"},
            timeout=timeout,
        )
        self._schema: dict[str, Any] | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- transport ----------------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise ConnectionFailed(f"{self.url} did not answer {method} {path} in time") from exc
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"cannot reach the Sfumato server at {self.url}: {_reason(exc)}") from exc
        if response.is_error:
            raise api_error(response.status_code, response_detail(response), method, path)
        return response

    def _get(self, path: str, **params: Any) -> Any:
        clean = {k: v for k, v in params.items() if v is not None}
        return self._request("GET", f"{API}{path}", params=clean).json()

    def _post(self, path: str, json: Any = None, **params: Any) -> Any:
        clean = {k: v for k, v in params.items() if v is not None}
        return self._request("POST", f"{API}{path}", json=json, params=clean).json()

    # -- jobs ---------------------------------------------------------------------------------------

    def spec_schema(self) -> dict[str, Any]:
        """The job spec's JSON schema, as the server validates it (fetched once)."""
        if self._schema is None:
            self._schema = self._get("/spec/schema")
        return self._schema

    def load_spec(self, path: str | Path, overrides: Iterable[str] = ()) -> dict[str, Any]:
        """A spec file (YAML or JSON, `${ENV}` interpolated) with `PATH=VALUE` overrides applied."""
        spec = read_spec_file(path)
        overrides = list(overrides)
        return apply_overrides(spec, overrides, self.spec_schema()) if overrides else spec

    def submit(
        self, spec: Mapping[str, Any] | str | Path, *, overrides: Iterable[str] = (), team: str | None = None
    ) -> Job:
        """Submit a spec (a mapping, or a path to a YAML/JSON file); returns the queued job."""
        overrides = list(overrides)
        if isinstance(spec, str | Path):
            data = self.load_spec(spec, overrides)
        else:
            data = apply_overrides(dict(spec), overrides, self.spec_schema()) if overrides else dict(spec)
        return Job.model_validate(self._post("/jobs", json=data, team=team))

    def jobs(
        self,
        *,
        status: str | Iterable[str] | None = None,
        executor: str | None = None,
        algorithm: str | None = None,
        name: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Job]:
        """Jobs the token's teams may see, newest first; `status` is one state or several."""
        statuses = status if status is None or isinstance(status, str) else ",".join(status)
        page = self._get(
            "/jobs", status=statuses, executor=executor, algorithm=algorithm, name=name, limit=limit, offset=offset
        )
        return [Job.model_validate(item) for item in page["items"]]

    def job(self, job_id: int) -> Job:
        """One job with its spec and status events."""
        return Job.model_validate(self._get(f"/jobs/{job_id}"))

    def wait(
        self,
        job_id: int,
        timeout: float | None = None,
        *,
        interval: float = 2.0,
        on_update: Callable[[Job], None] | None = None,
    ) -> Job:
        """Poll until the job has finished (succeeded, failed or cancelled) and return it.

        `on_update` sees the job after every poll (progress bars); past `timeout` seconds → WaitTimeout.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if on_update is not None:
                on_update(job)
            if job.finished:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(f"job {job_id} is still {job.status} after {timeout:g} s (step {job.step})")
            pause = interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic()))
            time.sleep(pause)

    def cancel(self, job_id: int) -> Job:
        """Cancel a queued job at once, or ask the worker to stop a running one."""
        return Job.model_validate(self._post(f"/jobs/{job_id}/cancel"))

    def retry(self, job_id: int) -> Job:
        """Queue a finished (failed or cancelled) job again."""
        return Job.model_validate(self._post(f"/jobs/{job_id}/retry"))

    # -- metrics ------------------------------------------------------------------------------------

    def metric_keys(self, job_id: int) -> list[str]:
        return list(self._get(f"/jobs/{job_id}/metrics/keys")["keys"])

    def metrics(
        self, job_id: int, keys: Iterable[str] | None = None, max_points: int = 1000
    ) -> dict[str, MetricSeries]:
        """Series by key (every key the job has when `keys` is None), downsampled by the server to at most
        `max_points` steps. Keys without points are absent."""
        wanted = self.metric_keys(job_id) if keys is None else list(dict.fromkeys(keys))
        result: dict[str, MetricSeries] = {}
        for start in range(0, len(wanted), MAX_KEYS_PER_REQUEST):
            chunk = wanted[start : start + MAX_KEYS_PER_REQUEST]
            data = self._get(f"/jobs/{job_id}/metrics", keys=",".join(chunk), max_points=max_points)
            for item in data["series"]:
                series = MetricSeries.model_validate(item)
                if series.points():
                    result[series.key] = series
        return result

    def metrics_table(
        self, job_id: int, keys: Iterable[str] | None = None, max_points: int = MAX_POINTS
    ) -> tuple[list[str], list[list[float | int | None]]]:
        """All series on one step axis: (["step", key, ...], rows), for CSV and parquet export."""
        series = self.metrics(job_id, keys, max_points)
        keys_sorted = sorted(series)
        by_step: dict[int, dict[str, float | None]] = {}
        for key in keys_sorted:
            for step, value in zip(series[key].steps, series[key].values, strict=True):
                by_step.setdefault(step, {})[key] = value
        rows: list[list[float | int | None]] = [
            [step, *(by_step[step].get(k) for k in keys_sorted)] for step in sorted(by_step)
        ]
        return ["step", *keys_sorted], rows

    def metrics_frame(
        self, job_id: int, keys: Iterable[str] | None = None, max_points: int = MAX_POINTS
    ) -> pandas.DataFrame:
        """The metrics as a pandas DataFrame indexed by step, one column per key (needs pandas)."""
        try:
            import pandas
        except ImportError as exc:
            raise MissingDependency("metrics_frame needs pandas: pip install 'sfumato[dataframe]'") from exc
        columns, rows = self.metrics_table(job_id, keys, max_points)
        return pandas.DataFrame(rows, columns=columns).set_index("step")

    # -- samples and logs ---------------------------------------------------------------------------

    def samples(self, job_id: int, step: int | None = None, kind: str | None = None) -> list[Sample]:
        """The job's sample images (their rows; `download` fetches the files)."""
        found: list[Sample] = []
        while True:
            page = self._get(f"/jobs/{job_id}/samples", step=step, kind=kind, limit=1000, offset=len(found))
            found.extend(Sample.model_validate(item) for item in page["items"])
            if not page["items"] or len(found) >= page["total"]:
                return found

    def sample_image(self, sample: Sample) -> bytes:
        """The image file of one sample (PNG or WebP bytes)."""
        return self._request("GET", sample.image_url).content

    def download_samples(
        self, job_id: int, folder: str | Path, step: int | None = None, kind: str | None = None
    ) -> list[Path]:
        """Save the job's sample images as `<folder>/step<step>-<id>.<png|webp>`; returns the paths."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for sample in self.samples(job_id, step, kind):
            response = self._request("GET", sample.image_url)
            suffix = ".webp" if "webp" in response.headers.get("content-type", "") else ".png"
            path = folder / f"step{sample.step:06d}-{sample.id}{suffix}"
            path.write_bytes(response.content)
            paths.append(path)
        return paths

    # -- artifacts ----------------------------------------------------------------------------------

    def artifacts(self, job_id: int) -> list[Artifact]:
        """The job's checkpoints, models and exports, oldest first."""
        return [Artifact.model_validate(item) for item in self._get(f"/jobs/{job_id}/artifacts")["items"]]

    def download_artifact(self, job_id: int, artifact_id: int, dest: str | Path, *, unpack: bool = True) -> Path:
        """Download an artifact into the folder `dest`, resuming a download cut short (Range) and checking its
        SHA-256; returns the file, or the unpacked folder of a folder artifact (`unpack=False`: its .tar)."""
        folder = Path(dest)
        part = folder / f".sfumato-{job_id}-{artifact_id}.part"
        path = f"{API}/jobs/{job_id}/artifacts/{artifact_id}/download"
        try:
            return download_artifact_to(self._http, path, part, folder, unpack=unpack)
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"download from {self.url} stopped: {_reason(exc)}; run it again to resume") from exc

    def logs(self, job_id: int, follow: bool = False, *, interval: float = 1.0) -> Iterator[LogLine]:
        """The job's log lines in order; with `follow`, keep yielding new ones until the job has finished."""
        offset, finished = 0, False
        while True:
            page = self._get(f"/jobs/{job_id}/logs", offset=offset, limit=1000)
            for item in page["lines"]:
                yield LogLine.model_validate(item)
            offset = page["next_offset"]
            if page["lines"]:
                continue
            if not follow or finished:
                return
            # Once the job has finished, one more read collects lines written just before it ended.
            finished = self.job(job_id).finished
            if not finished:
                time.sleep(interval)

    # -- comparisons, hosts, tokens -----------------------------------------------------------------

    def compare(
        self, job_ids: Iterable[int], reference: int | None = None, reward_target: float | str | None = None
    ) -> Comparison:
        """The server's compare answer: per job its samples/s (the median after a warm-up, stated in
        `definitions`), speedup over one reference job (`reference`, one of the ids; by default the server's
        rule, whatever the order of the ids: `Comparison.reference` says "speedup over #N"), analytical bound,
        peak memory, rewards, duration, reward against running seconds and the time to reach `reward_target`
        (default: the final reward of the set's native Flow-GRPO job), and the jobs it shared a host with; and
        the spec fields that differ."""
        ids = ",".join(str(i) for i in job_ids)
        return Comparison.model_validate(
            self._get("/compare", jobs=ids, reference=reference, reward_target=reward_target)
        )

    def hosts(self) -> list[Host]:
        """Worker hosts with their devices and which job holds each."""
        return [Host.model_validate(item) for item in self._get("/hosts")["items"]]

    # -- reward services ----------------------------------------------------------------------------

    def services(self, *, live: bool = False, limit: int = 50, offset: int = 0) -> list[RewardService]:
        """Reward services of the token's teams, newest first (`live`: not stopped or failed), each with its
        host, devices, request rate, latency p50/p99, errors and the jobs using it."""
        page = self._get("/services", live=live or None, limit=limit, offset=offset)
        return [RewardService.model_validate(item) for item in page["items"]]

    def service(self, service_id: int) -> RewardService:
        return RewardService.model_validate(self._get(f"/services/{service_id}"))

    def create_service(
        self,
        name: str,
        reward: str,
        *,
        path: str | None = None,
        devices: int = 1,
        device_type: str | None = None,
        team: str | None = None,
    ) -> RewardService:
        """A reward server the platform places, starts and health-checks; jobs of the team name it with
        `{"name": "service", "service": name}` in their reward list. Without a device type the server chooses
        one that an online host offers."""
        body = {"name": name, "reward": reward, "path": path, "devices": devices}
        chosen = {key: value for key, value in {"device_type": device_type, "team": team}.items() if value}
        return RewardService.model_validate(self._post("/services", json=body | chosen))

    def stop_service(self, service_id: int) -> RewardService:
        return RewardService.model_validate(self._post(f"/services/{service_id}/stop"))

    def tokens(self) -> list[ApiToken]:
        """The caller's API tokens (without their secrets)."""
        return [ApiToken.model_validate(item) for item in self._get("/tokens")["items"]]

    def create_token(self, name: str, *, scope: str = "write", expires_in_days: int | None = None) -> ApiToken:
        """A new API token for the caller; its secret (`.token`) is in this answer only."""
        body: dict[str, Any] = {"name": name, "scope": scope}
        if expires_in_days is not None:
            body["expires_in_days"] = expires_in_days
        return ApiToken.model_validate(self._post("/tokens", json=body))

    def revoke_token(self, token_id: int) -> None:
        self._request("DELETE", f"{API}/tokens/{token_id}")

    def check(self) -> None:
        """Raise unless the server answers and accepts the token."""
        self._get("/jobs", limit=1)


def _reason(exc: httpx.HTTPError) -> str:
    cause = exc.__cause__ or exc.__context__
    text = str(cause or exc) or type(exc).__name__
    return text.split("] ", 1)[-1]  # "[Errno 111] Connection refused" → "Connection refused"
