"""A job's duration is the sum of the intervals in which its trainer ran (services.job_duration): the time the
platform was down between two attempts is not in it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from server.services.job_duration import RunInterval, ran_for

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_the_time_the_platform_was_down_between_two_attempts_is_not_counted() -> None:
    # Attempt 1 ran 10 min, was last seen at 9:10, the platform was down until 10:00 and noticed the end then;
    # attempt 2 ran 5 min.
    first = RunInterval(started_at=at(0), last_seen_at=at(10), ended_at=at(60))
    second = RunInterval(started_at=at(61), last_seen_at=at(66), ended_at=at(66))

    assert ran_for([first, second], now=at(90)) == 15 * 60


def test_an_attempt_still_running_counts_to_now() -> None:
    running = RunInterval(started_at=at(0), last_seen_at=at(1), ended_at=None)

    assert ran_for([running], now=at(3)) == 3 * 60


def test_a_job_whose_trainer_never_started_has_no_duration() -> None:
    placed_only = RunInterval(started_at=None, last_seen_at=None, ended_at=at(5))

    assert ran_for([placed_only], now=at(10)) is None


def test_stored_times_without_a_zone_are_read_as_utc() -> None:
    running = RunInterval(started_at=at(0).replace(tzinfo=None), last_seen_at=None, ended_at=None)

    assert ran_for([running], now=at(10)) == 10 * 60
