"""The advisor asked twice on a simulated noisy host: probe reports whose rounds carry a drifting host load (the
same for every executor within a round, as the interleaved probe runs them back to back) and each step's own
noise. The answer is the same both times unless it says that the intervals overlap; the speedup intervals cover
the true speedup about as often as they claim; the point figures alone flip under the same noise."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from server.schemas.advice import AdviceAnswer
from server.services.advice_verdict import advice_answer
from tests.spec.advice_fixture import REPORT, SPEC, native_model, retain_model
from trainer.probe.measure import TIMED_ROUNDS
from trainer.spec.advice import predict
from trainer.spec.probe_report import ExecutorProbe, ProbePoint, ProbeReport

SIZES = [(k, n) for k in (2, 4) for n in (4, 8)]
LOAD_SIGMA = 0.3  # the host's load between rounds: a step takes e^N(0, 0.3) of its time, and drifts upward
STEP_SIGMA = 0.05  # each step's own noise
NATIVE_AT_FULL_SIZE = 129.0  # seconds (tests/spec/test_advice_arithmetic.py)
RETAIN_AT_FULL_SIZE = 49.5


def noisy_report(rng: random.Random, true_speedup: float) -> ProbeReport:
    """A probe of native and lean_retain where lean_retain's prediction, without noise, is ``true_speedup``."""
    scale = NATIVE_AT_FULL_SIZE / (RETAIN_AT_FULL_SIZE * true_speedup)
    seconds = {"native": lambda k, n: 2 * native_model(k, n), "lean_retain": lambda k, n: scale * retain_model(k, n)}
    loads = {size: [math.exp(0.1 * r + rng.gauss(0, LOAD_SIGMA)) for r in range(TIMED_ROUNDS)] for size in SIZES}
    probes = []
    for name, step in seconds.items():
        points = []
        for k, n in SIZES:
            rounds = [step(k, n) * load * math.exp(rng.gauss(0, STEP_SIGMA)) for load in loads[(k, n)]]
            points.append(
                ProbePoint(
                    trained=k,
                    prompts=n // 4,
                    rows=n,
                    step_seconds=statistics.median(rounds),
                    round_seconds=rounds,
                    peak_bytes=n * 2**28,
                )
            )
        probes.append(ExecutorProbe(name=name, exactness="E0", points=points))
    return REPORT.model_copy(update={"executors": probes})


def ask(rng: random.Random, true_speedup: float) -> AdviceAnswer:
    return advice_answer(predict(SPEC, noisy_report(rng, true_speedup)), None)


def test_a_clear_speedup_is_recommended_every_time_asked() -> None:
    rng = random.Random(1)
    assert {ask(rng, 1.6).recommended for _ in range(40)} == {"lean_retain"}


@pytest.mark.parametrize("true_speedup", [1.0, 1.05, 1.6])
def test_asked_twice_the_answer_is_the_same_unless_it_says_the_intervals_overlap(true_speedup: float) -> None:
    rng = random.Random(2)
    for _ in range(40):
        first, second = ask(rng, true_speedup), ask(rng, true_speedup)
        assert first.recommended == second.recommended or any("overlaps" in a.why for a in (first, second))


def test_without_a_clear_speedup_native_is_recommended_nearly_always() -> None:
    rng = random.Random(3)
    answers = [ask(rng, 1.0) for _ in range(80)]
    assert sum(a.recommended == "native" for a in answers) >= 72  # a 95% interval clears 1 by chance 1 time in 40


def test_the_point_figures_alone_would_flip_under_the_same_noise() -> None:
    """lean_retain 2% faster: its point speedup falls on either side of native's from one ask to the next."""
    rng = random.Random(4)
    faster = {answer.executors[1].speedup > 1 for answer in (ask(rng, 1.02) for _ in range(20))}  # type: ignore[operator]
    assert faster == {True, False}


def test_the_speedup_interval_covers_the_true_speedup_about_as_often_as_it_claims() -> None:
    rng = random.Random(5)
    covered = 0
    for _ in range(200):
        interval = ask(rng, 1.3).executors[1].speedup_interval
        assert interval is not None
        covered += interval.low <= 1.3 <= interval.high
    assert covered >= 180  # 95% claimed; 190 expected
