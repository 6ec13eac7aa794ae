"""The client's experiment calls (mixed into `Client`): submit a spec over a matrix of axes, follow, read the
summary, cancel, retry, add notes, and download the report.

    experiment = client.experiment("spec.yaml", {"executor.name": ["native", "jagg"], "seed": [1, 2, 3]})
    experiment = client.wait_experiment(experiment.id)
    print(*(v["text"] for v in client.experiment_summary(experiment.id).verdicts), sep="\\n")
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import httpx

from sfumato.errors import WaitTimeout
from sfumato.models import Experiment, ExperimentSummary
from sfumato.specfile import apply_overrides, parse_axis, read_spec_file

API = "/api/v1"
Axes = Mapping[str, Sequence[Any]] | Iterable[str]


class ExperimentCalls:
    """Needs the Client's transport (`_request`, `_get`, `_post`) and `spec_schema`."""

    _request: Callable[..., httpx.Response]
    _get: Callable[..., Any]
    _post: Callable[..., Any]
    spec_schema: Callable[[], dict[str, Any]]

    def experiment(
        self,
        spec: Mapping[str, Any] | str | Path,
        axes: Axes,
        *,
        name: str | None = None,
        fair_timing: bool | None = None,
        overrides: Iterable[str] = (),
        team: str | None = None,
    ) -> Experiment:
        """Submit `spec` (a mapping or a YAML/JSON file) over `axes`, `{"seed": [1, 2]}` or `["seed=1,2"]`: one
        job per combination; refused whole (ValidationFailed naming the cell and field) if any cell is bad."""
        data = read_spec_file(spec) if isinstance(spec, str | Path) else dict(spec)
        overrides = list(overrides)
        if overrides:
            data = apply_overrides(data, overrides, self.spec_schema())
        pairs = list(axes.items()) if isinstance(axes, Mapping) else [parse_axis(a) for a in axes]
        body: dict[str, Any] = {
            "name": name
            or str(data.get("name") or (Path(spec).stem if isinstance(spec, str | Path) else "experiment")),
            "spec": data,
            "axes": [{"path": path, "values": list(values)} for path, values in pairs],
        }
        if fair_timing is not None:
            body["fair_timing"] = fair_timing
        return Experiment.model_validate(self._post("/experiments", json=body, team=team))

    def experiments(
        self,
        *,
        state: str | Iterable[str] | None = None,
        name: str | None = None,
        created_by: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Experiment]:
        """Experiments of the token's teams, newest first."""
        states = state if state is None or isinstance(state, str) else ",".join(state)
        page = self._get("/experiments", state=states, name=name, created_by=created_by, limit=limit, offset=offset)
        return [Experiment.model_validate(item) for item in page["items"]]

    def experiment_detail(self, experiment_id: int) -> Experiment:
        """One experiment with its cells, summary and notes."""
        return Experiment.model_validate(self._get(f"/experiments/{experiment_id}"))

    def experiment_summary(self, experiment_id: int) -> ExperimentSummary:
        """The live summary: intervals per cell group, verdicts per executor, flagged cells."""
        summary = self.experiment_detail(experiment_id).summary
        assert summary is not None  # the detail always carries it
        return summary

    def wait_experiment(
        self,
        experiment_id: int,
        timeout: float | None = None,
        *,
        interval: float = 2.0,
        on_update: Callable[[Experiment], None] | None = None,
    ) -> Experiment:
        """Poll until every cell has ended and return the experiment; past `timeout` seconds → WaitTimeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            experiment = self.experiment_detail(experiment_id)
            if on_update is not None:
                on_update(experiment)
            if experiment.finished:
                return experiment
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(f"experiment {experiment_id} is still {experiment.state} after {timeout:g} s")
            pause = interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic()))
            time.sleep(pause)

    def cancel_experiment(self, experiment_id: int) -> Experiment:
        return Experiment.model_validate(self._post(f"/experiments/{experiment_id}/cancel"))

    def retry_experiment(self, experiment_id: int) -> Experiment:
        """Run the failed cells again."""
        return Experiment.model_validate(self._post(f"/experiments/{experiment_id}/retry"))

    def add_experiment_note(self, experiment_id: int, body: str) -> dict[str, Any]:
        """A Markdown note; the answer carries it rendered (`html`)."""
        return dict(self._post(f"/experiments/{experiment_id}/notes", json={"body": body}))

    def export_experiment(
        self, experiment_id: int, format: Literal["md", "html"] = "html", path: str | Path | None = None
    ) -> bytes:
        """The report (the same bytes the API serves: the HTML page, or for md a zip of one folder with report.md
        and its images/); written to `path` too when given: a Markdown report whose path does not end in .zip
        is unpacked into that folder."""
        data = self._request("GET", f"{API}/experiments/{experiment_id}/report", params={"format": format}).content
        if path is None:
            return data
        if format == "md" and Path(path).suffix != ".zip":
            unpack_report(data, Path(path))
        else:
            Path(path).write_bytes(data)
        return data


def unpack_report(data: bytes, folder: Path) -> None:
    """The zip's one folder's files, written under `folder` (report.md, images/...); a name that would leave the
    folder is refused."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for entry in archive.infolist():
            inside = PurePosixPath(entry.filename).parts[1:]
            if entry.is_dir() or not inside:
                continue
            if ".." in inside or PurePosixPath(entry.filename).is_absolute():
                raise ValueError(f"the report names a file outside its folder: {entry.filename!r}")
            target = folder.joinpath(*inside)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(entry))
