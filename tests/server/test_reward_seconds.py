"""A reward point's second is the job's duration counted up to the moment it was reported
(job_duration.ran_until): the time between two attempts is not in it, and the last point of a finished job lies
at its duration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from server.services.job_duration import RunInterval, ran_for, ran_until

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


# Attempt 1 ran 10 min (the platform noticed its end only at 10:00); attempt 2 from 10:01 to 10:06.
FIRST = RunInterval(started_at=at(0), last_seen_at=at(10), ended_at=at(60))
SECOND = RunInterval(started_at=at(61), last_seen_at=at(66), ended_at=at(66))


def test_a_point_of_the_second_attempt_counts_the_first_attempt_s_running_time_and_not_the_gap() -> None:
    assert ran_until([FIRST, SECOND], at(63), now=at(90)) == (10 + 2) * 60


def test_a_point_inside_the_first_attempt_counts_from_its_start() -> None:
    assert ran_until([FIRST, SECOND], at(4), now=at(90)) == 4 * 60


def test_the_last_moment_of_a_finished_job_lies_at_its_duration() -> None:
    assert ran_until([FIRST, SECOND], at(66), now=at(90)) == ran_for([FIRST, SECOND], now=at(90))


def test_a_point_while_the_job_runs_counts_up_to_the_point_not_to_now() -> None:
    running = RunInterval(started_at=at(0), last_seen_at=at(1), ended_at=None)
    assert ran_until([running], at(2), now=at(5)) == 2 * 60
