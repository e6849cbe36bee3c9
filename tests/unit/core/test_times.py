"""Times on the command line: a bad or out-of-range one is a one-line ChatlogError (issue 13, item 3)."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from core.errors import ChatlogError
from core.times import MAX_MS, day_start_ms, epoch_ms, naive_utc, now_ms, parse_time, time_window, utc_day


def test_epoch_ms_and_iso_8601() -> None:
    assert parse_time("0") == 0
    assert parse_time(str(MAX_MS)) == MAX_MS
    assert parse_time(" 1795281600000 ") == 1_795_281_600_000
    assert parse_time("2026-11-21T15:04:05Z") == 1_795_273_445_000
    assert parse_time("9999-12-31T23:59:59.999Z") == MAX_MS


@pytest.mark.parametrize(
    "text",
    ["²", "١٢٣", "\uff11\uff12\uff13", "yesterday", "", "2026-13-01", "12:00", "2026-11-21T15:04:05Z;x"],
)
def test_not_a_time(text: str) -> None:
    with pytest.raises(ChatlogError, match=r"^--since: .* is not a time") as info:
        parse_time(text, "--since")
    assert len(str(info.value)) < 200


@pytest.mark.parametrize(
    "text",
    [
        "99999999999999999999999",
        "9" * 5000,
        str(MAX_MS + 1),
        "-1",
        "1969-12-31T23:59:59Z",
        "0001-01-01",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
    ],
)
def test_out_of_range(text: str) -> None:
    with pytest.raises(ChatlogError, match=r"^--until: .* is out of range"):
        parse_time(text, "--until")


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        (datetime(1970, 1, 1), 0),
        (datetime(2026, 11, 21, 15, 4, 5, 123_999), 1_795_273_445_123),  # floored, never rounded up
        (datetime(2026, 11, 21, 15, 4, 5, 1_000), 1_795_273_445_001),  # .001 s: a float would give ...000
        (datetime(9999, 12, 31, 23, 59, 59, 999_999), MAX_MS),
        (datetime(1969, 12, 31, 23, 59, 59, 999_999), -1),
    ],
)
def test_a_driver_timestamp_naive_utc_is_exact_epoch_ms(value: datetime, ms: int) -> None:
    assert epoch_ms(value) == ms
    assert epoch_ms(value.replace(tzinfo=UTC)) == ms


def test_an_aware_datetime_is_taken_in_its_zone() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert epoch_ms(datetime(2026, 11, 21, 17, 4, 5, tzinfo=plus_two)) == 1_795_273_445_000


def test_every_millisecond_of_a_second_survives() -> None:
    base = datetime(2026, 11, 21, 15, 4, 5)
    assert [epoch_ms(base + timedelta(milliseconds=i)) - epoch_ms(base) for i in range(1000)] == list(
        range(1000)
    )


@pytest.mark.parametrize("ms", [0, 1, 1_795_273_445_001, MAX_MS])
def test_naive_utc_is_the_drivers_timestamp_and_epoch_ms_its_inverse(ms: int) -> None:
    moment = naive_utc(ms)
    assert moment.tzinfo is None and epoch_ms(moment) == ms


@pytest.mark.parametrize("ms", [0, 1, 86_399_999, 86_400_000, 1_795_273_445_000, 1_795_305_599_999, MAX_MS])
def test_a_days_first_ms_and_the_day_of_a_ms(ms: int) -> None:
    day = utc_day(ms)
    assert day == datetime.fromtimestamp(ms / 1000, UTC).date()  # what each reader computed before
    assert day_start_ms(day) <= ms < day_start_ms(day) + 86_400_000
    assert utc_day(day_start_ms(day)) == day and day_start_ms(date(1970, 1, 2)) == 86_400_000


def test_a_commands_time_window_defaults_to_the_last_day_until_now() -> None:
    now = 1_795_273_445_000
    assert time_window(None, None, now_ms=now) == (now - 86_400_000, now)
    assert time_window("0", None, now_ms=now) == (0, now)
    assert time_window(None, "1000", now_ms=now, default_ms=10) == (990, 1000)
    with pytest.raises(ChatlogError, match=r"^--until must be after --since$"):
        time_window("5", "5", now_ms=now)
    with pytest.raises(ChatlogError, match=r"^--since: "):
        time_window("yesterday", None, now_ms=now)


def test_now_in_epoch_ms_is_the_wall_clock() -> None:
    before = time.time_ns() // 1_000_000
    now = now_ms()
    assert isinstance(now, int) and before - 1 <= now <= time.time_ns() // 1_000_000 + 1
