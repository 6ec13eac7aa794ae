"""The client's executor-advisor calls (mixed into `Client`): ask which executor to run a spec with, wait for
the probe's answer, and submit with the chosen executor.

    advice = client.wait_advice(client.advise("spec.yaml", memory_budget="40GiB").id)
    job = client.submit_from_advice(advice.id, advice.answer.recommended)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sfumato.errors import WaitTimeout
from sfumato.models import Advice, Job, PredictionCheck


class AdviceCalls:
    """Needs the Client's transport (`_get`, `_post`) and `load_spec`."""

    _get: Callable[..., Any]
    _post: Callable[..., Any]
    load_spec: Callable[..., dict[str, Any]]

    def advise(
        self,
        spec: Mapping[str, Any] | str | Path,
        *,
        memory_budget: str | int | None = None,
        host_class: str | None = None,
        team: str | None = None,
    ) -> Advice:
        """Queue a probe of every executor on the host class; the advice is `probing` until it reports."""
        data = self.load_spec(spec) if isinstance(spec, str | Path) else dict(spec)
        body = {"spec": data, "memory_budget": memory_budget, "host_class": host_class}
        return Advice.model_validate(self._post("/advise", json=body, team=team))

    def advice(self, advice_id: int) -> Advice:
        return Advice.model_validate(self._get(f"/advice/{advice_id}"))

    def wait_advice(self, advice_id: int, timeout: float | None = None, *, interval: float = 2.0) -> Advice:
        """Poll until the probe has answered (or failed); past `timeout` seconds → WaitTimeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            advice = self.advice(advice_id)
            if advice.settled:
                return advice
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(f"advice {advice_id} is still probing after {timeout:g} s")
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))

    def submit_from_advice(self, advice_id: int, executor: str, *, team: str | None = None) -> Job:
        """Submit the advised spec with `executor`, exclusive on its hosts; the job links the advice (predicted
        against measured)."""
        return Job.model_validate(self._post(f"/advice/{advice_id}/submit", json={"executor": executor}, team=team))

    def prediction(self, job_id: int) -> PredictionCheck | None:
        """A job submitted from an advice: predicted against measured, with the shared-host warning; None for
        a job not submitted from an advice."""
        found = self._get(f"/jobs/{job_id}/prediction")
        return None if found is None else PredictionCheck.model_validate(found)
