"""A hand-computed probe report for the advice (docs in tests/spec/test_advice_arithmetic.py): the arithmetic
test checks the answer against it, the API tests send it through the ingest door as a probe job would."""

from __future__ import annotations

from trainer.spec import parse_spec
from trainer.spec.probe_report import ExecutorProbe, MeasuredUnitCosts, ProbePoint, ProbeReport

GIB = 2**30
SPEC_DATA = {
    "name": "fixture",
    "algorithm": {"sampling_steps": 6, "train_timesteps": 5, "group_size": 4, "prompts_per_step": 2},
    "model": {"finetune": "full"},
}
SPEC = parse_spec(SPEC_DATA)


def native_model(trained: int, rows: int) -> float:
    forward = {4: 2.0, 8: 3.0}[rows]
    return 6 * forward + trained * 3 * forward + rows / 8 + 0.5


def retain_model(trained: int, rows: int) -> float:
    forward = {4: 2.0, 8: 3.0}[rows]
    return (6 - trained) * forward + trained * 3 * forward + rows / 8 + 0.5


# Each executor's three timed rounds, as factors of its step time at every probe point: their geometric mean and
# their median are 1, so the predictions are the hand-computed ones; native and lean_retain move apart round by
# round, so the speedup's rounds are 2.61x times 0.95/1.05, 1 and 1.05/0.95.
NATIVE_ROUNDS = (0.95, 1.0, 1 / 0.95)
RETAIN_ROUNDS = (1.05, 1.0, 1 / 1.05)


def points(seconds, peak, rounds=(1.0,)) -> list[ProbePoint]:  # type: ignore[no-untyped-def]
    return [
        ProbePoint(
            trained=k,
            prompts=n // 4,
            rows=n,
            step_seconds=seconds(k, n),
            round_seconds=[seconds(k, n) * factor for factor in rounds],
            peak_bytes=int(peak(k, n)),
        )
        for k in (2, 4)
        for n in (4, 8)
    ]


REPORT = ProbeReport(
    device_type="cpu",
    world_size=1,
    unit_costs=[
        MeasuredUnitCosts(rows=1, forward=1, forward_grad=1, backward=2),
        MeasuredUnitCosts(rows=4, forward=2, forward_grad=2, backward=4),
        MeasuredUnitCosts(rows=8, forward=3, forward_grad=3, backward=6),
    ],
    reward_seconds_per_sample=0.125,
    optimizer_seconds=0.5,
    resident_bytes=10 * GIB,
    memory_method="hand-computed",
    executors=[
        ExecutorProbe(
            name="native",
            exactness="E0",
            points=points(lambda k, n: 2 * native_model(k, n), lambda k, n: n / 4 * GIB, NATIVE_ROUNDS),
        ),
        ExecutorProbe(
            name="lean_retain",
            exactness="E0",
            points=points(retain_model, lambda k, n: k * n / 4 * GIB, RETAIN_ROUNDS),
        ),
        ExecutorProbe(name="jagg", error="probe failed at K=4, 1 prompt(s): out of memory"),
    ],
)
