"""The query parameters and path dates of the log routes, parsed with a 400 that names what is wrong.

Formats are flags, as in justlog and rustlog (present, whatever the value): ``raw`` > ``jsonBasic`` >
``json`` > ``ndjson`` > ``web`` (the web page's own, :func:`serve.formats.page_message`) > text, and
justlog's ``type=json|raw``. ``from``/``to`` are unix seconds (justlog)
or RFC 3339 (rustlog).
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import Final

from starlette.datastructures import QueryParams

from core.times import day_start_ms, epoch_ms
from serve.errors import ApiError, bad_request

MAX_MS: Final = 253_402_300_799_999
_DIGITS: Final = re.compile(r"[0-9]{1,16}")
_DATE_PART: Final = re.compile(r"[0-9]{1,4}")
_SHOWN: Final = 40


class Format(StrEnum):
    TEXT = "text"
    RAW = "raw"
    JSON = "json"
    JSON_BASIC = "jsonBasic"
    NDJSON = "ndjson"
    WEB = "web"


@dataclass(frozen=True, slots=True)
class LogQuery:
    format: Format
    reverse: bool
    limit: int | None
    offset: int
    since_ms: int | None
    until_ms: int | None


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def output_format(query: QueryParams) -> Format:
    kind = query.get("type")
    if "raw" in query or kind == "raw":
        return Format.RAW
    if "jsonBasic" in query:
        return Format.JSON_BASIC
    if "json" in query or kind == "json":
        return Format.JSON
    if "ndjson" in query:
        return Format.NDJSON
    if "web" in query:
        return Format.WEB
    return Format.TEXT


def count(query: QueryParams, name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    if not _DIGITS.fullmatch(value):
        raise bad_request(f"invalid {name}: {_shown(value)} is not a whole number >= 0")
    return int(value)


def moment(query: QueryParams, name: str, *, end: bool = False) -> int | None:
    """Epoch ms of ``from``/``to``: unix seconds, or RFC 3339 (UTC unless it says otherwise). ``end``:
    unix seconds name their whole second (its last millisecond), as justlog compares seconds."""
    value = query.get(name)
    if value is None or value == "":
        return None
    value = value.strip()
    if re.fullmatch(r"-?[0-9]+", value):
        if len(value) > 15:  # past 9999 as seconds (and int() of thousands of digits is slow)
            raise bad_request(f"invalid {name}: {_shown(value)} is out of range (unix seconds, 1970 .. 9999)")
        ms = int(value) * 1000 + (999 if end else 0)
        if ms > MAX_MS and int(value) <= MAX_MS:
            raise bad_request(
                f"invalid {name}: {_shown(value)} is out of range: {name} is in unix seconds, not ms"
            )
    else:
        try:
            parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "zZ" and value else value)
        except ValueError:
            raise bad_request(
                f"invalid {name}: {_shown(value)} is neither unix seconds nor RFC 3339 "
                "(e.g. 2024-01-02T15:04:05Z)"
            ) from None
        ms = epoch_ms(parsed)  # no zone: UTC
    if not 0 <= ms <= MAX_MS:
        raise bad_request(f"invalid {name}: {_shown(value)} is out of range (1970 .. 9999)")
    return ms


PLAIN: Final = LogQuery(Format.TEXT, reverse=False, limit=None, offset=0, since_ms=None, until_ms=None)
"""The query of a request without parameters (most of them): text, oldest first, every line."""


def log_query(query: QueryParams) -> LogQuery:
    if not query:
        return PLAIN
    return LogQuery(
        format=output_format(query),
        reverse="reverse" in query,
        limit=count(query, "limit"),
        offset=count(query, "offset") or 0,
        since_ms=moment(query, "from"),
        until_ms=moment(query, "to", end=True),
    )


def _number(text: str, what: str, lo: int, hi: int) -> int:
    if not _DATE_PART.fullmatch(text) or not lo <= int(text) <= hi:
        raise bad_request(f"invalid {what}: {_shown(text)} (expected {lo} .. {hi})")
    return int(text)


@functools.lru_cache(maxsize=4096)  # a bad date raises, and is not kept
def day_range(year: str, month: str, day: str) -> tuple[int, int]:
    """Epoch ms of the UTC day ``year/month/day`` and of the next day (a few us; kept for the days asked
    most)."""
    y = _number(year, "year", 1970, 9999)
    m = _number(month, "month", 1, 12)
    d = _number(day, "day", 1, calendar.monthrange(y, m)[1])
    start = day_start_ms(date(y, m, d))
    return start, start + 86_400_000


@functools.lru_cache(maxsize=1024)  # a bad month raises, and is not kept
def month_range(year: str, month: str) -> tuple[int, int]:
    """Epoch ms of the first instant of the UTC month ``year/month`` and of the next month (kept for the
    months asked most)."""
    y = _number(year, "year", 1970, 9999)
    m = _number(month, "month", 1, 12)
    start = day_start_ms(date(y, m, 1))
    return start, start + calendar.monthrange(y, m)[1] * 86_400_000


def narrowed(lo: int, hi: int, query: LogQuery) -> tuple[int, int]:
    """The range ``[lo, hi)`` narrowed by ``from``/``to`` (``to`` included: up to its next millisecond);
    a 400 saying why when nothing is left of it."""
    if query.since_ms is not None:
        lo = max(lo, query.since_ms)
    if query.until_ms is not None:
        hi = min(hi, query.until_ms + 1)
    if lo >= hi:
        raise empty_range(query)
    return lo, hi


def empty_range(query: LogQuery) -> ApiError:
    """The 400 of a time range with nothing in it, naming what emptied it."""
    since, until = query.since_ms, query.until_ms
    if since is not None and until is not None and since > until:
        return bad_request("invalid range: from is after to")
    if since is not None:
        return bad_request(
            "invalid range: from is after the end of the time asked for (the day, month or now)"
        )
    if until is not None:
        return bad_request(
            "invalid range: to is before the start of the time asked for (the day or month, or "
            "the default span before now: give from too)"
        )
    return bad_request("invalid range: it is empty")
