"""Points in time as epoch milliseconds: given on the command line (ISO-8601 or epoch ms), or read from
Cassandra (a ``timestamp`` column, which cassandra-driver returns as a naive UTC ``datetime``)."""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta
from typing import Final

from core.errors import ChatlogError

MIN_MS: Final = 0
"""1970-01-01T00:00:00Z: nothing was logged before."""
MAX_MS: Final = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last instant a Python datetime (and so the driver) can hold."""

_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_UTC: Final = _EPOCH.replace(tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
_EPOCH_MS = re.compile(r"-?[0-9]+")  # ASCII digits only: str.isdigit() also accepts '²' or '٣'
_SHOWN = 40


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def now_ms() -> int:
    """The time now as epoch ms (the wall clock: ``time.time()``)."""
    return int(time.time() * 1000)


def epoch_ms(value: datetime) -> int:
    """Epoch ms of ``value``: a naive datetime is UTC (what cassandra-driver returns for a ``timestamp``),
    an aware one is taken in its zone. Exact (integer arithmetic, never a float): microseconds are
    floored to the millisecond."""
    return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // _MS


def naive_utc(ms: int) -> datetime:
    """The naive UTC datetime of epoch ``ms`` (what cassandra-driver binds as a ``timestamp``); exact, the
    inverse of :func:`epoch_ms` for every ms from :data:`MIN_MS` to :data:`MAX_MS`."""
    return _EPOCH + _MS * ms


def utc_day(ms: int) -> date:
    """The UTC date of epoch ``ms`` (a log's day)."""
    return (_EPOCH + _MS * ms).date()


def day_start_ms(day: date) -> int:
    """Epoch ms of 00:00 UTC of ``day``: the inverse of :func:`utc_day` for the first instant of a day."""
    return (day - _EPOCH.date()).days * 86_400_000


def parse_time(text: str, what: str = "time") -> int:
    """Epoch ms of ``text``: digits are epoch ms, anything else ISO-8601 (UTC unless it says otherwise).

    Raises :class:`ChatlogError` (one line naming ``what``, e.g. ``--since``) when ``text`` is not a
    time or lies outside 1970-01-01 .. 9999-12-31.
    """
    value = text.strip()
    if _EPOCH_MS.fullmatch(value):
        ms = int(value) if len(value) <= 20 else MAX_MS + 1  # int() of 5000 digits raises ValueError
    else:
        try:
            moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
            ms = epoch_ms(moment)  # no zone: UTC
        except (ValueError, OverflowError):
            raise ChatlogError(
                f"{what}: {_shown(text)} is not a time (use ISO-8601 such as 2026-11-21T15:04:05Z, "
                "or epoch milliseconds)"
            ) from None
    if not MIN_MS <= ms <= MAX_MS:
        raise ChatlogError(
            f"{what}: {_shown(text)} is out of range (1970-01-01 .. 9999-12-31, or epoch ms 0 .. {MAX_MS})"
        )
    return ms


def time_window(
    since: str | None, until: str | None, *, now_ms: int, default_ms: int = 86_400_000
) -> tuple[int, int]:
    """``(since, until)`` in epoch ms of a command's ``--since``/``--until`` (:func:`parse_time`): until
    defaults to ``now_ms``, since to ``default_ms`` before until. Raises :class:`ChatlogError` when until
    is not after since."""
    until_ms = parse_time(until, "--until") if until is not None else now_ms
    since_ms = parse_time(since, "--since") if since is not None else until_ms - default_ms
    if until_ms <= since_ms:
        raise ChatlogError("--until must be after --since")
    return since_ms, until_ms


def format_time(ms: int) -> str:
    """``2026-11-21 15:04:05`` (UTC) for epoch ms."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
