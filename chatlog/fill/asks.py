"""What to ask a peer for: the times not logged here and not yet filled from it, one request per UTC day
(pure logic).

A justlog/rustlog/chatlog peer serves a channel's UTC day at ``/channel/<login>/<y>/<m>/<d>`` (or
``/channelid/<id>/...``); ``?raw`` gives the IRC lines as received, and ``from``/``to`` (unix seconds, both
included) narrow it on chatlog. justlog reads ``from``/``to`` only on its ``/range`` routes, and rustlog's
log parameters have none: both answer the whole day, so the lines outside the time asked are left out here
(:mod:`chatlog.fill.accept`), never trusted to the peer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

from core.coverage_spans import Gap
from core.errors import ChatlogError
from core.times import utc_day
from schemas.coverage import DAY_MS

Window = tuple[int, int]
"""``[start, end)`` in epoch ms."""


@dataclass(frozen=True)
class Ask:
    """One request: the lines of the times ``windows`` (in order, within one UTC day) from the peer."""

    windows: tuple[Window, ...]

    @property
    def start(self) -> int:
        return self.windows[0][0]

    @property
    def end(self) -> int:
        return self.windows[-1][1]

    @property
    def day(self) -> int:
        """The UTC day (days since the epoch)."""
        return self.start // DAY_MS

    @property
    def seconds(self) -> float:
        return sum(hi - lo for lo, hi in self.windows) / 1000

    @property
    def from_s(self) -> int:
        """``from``: the unix second of the start."""
        return self.start // 1000

    @property
    def to_s(self) -> int:
        """``to``: the unix second of the last millisecond (justlog and chatlog include all of it)."""
        return (self.end - 1) // 1000

    @property
    def accepted(self) -> tuple[Window, ...]:
        """The times (epoch ms) of the lines the answer may hold: each window in the whole seconds asked."""
        return tuple((lo // 1000 * 1000, ((hi - 1) // 1000 + 1) * 1000) for lo, hi in self.windows)

    def path(self, channel: str, channel_id: str | None = None) -> str:
        """``/channel/<c>/<y>/<m>/<d>?raw&from=<unix>&to=<unix>`` (``/channelid/<id>/...`` given an id)."""
        day = utc_day(self.start)
        where = f"{subject(channel, channel_id)}/{day.year}/{day.month}/{day.day}"
        return f"/{where}?raw&from={self.from_s}&to={self.to_s}"


def subject(channel: str, channel_id: str | None = None) -> str:
    """``channel/<login>``, or ``channelid/<id>`` given an id (the path's first two parts)."""
    return f"channelid/{quote(channel_id, safe='')}" if channel_id else f"channel/{quote(channel, safe='')}"


def asks(found: Iterable[Gap], peer: str, days: Collection[int] | None = None) -> list[Ask]:
    """The times of ``found`` not filled from ``peer`` yet, one request per UTC day (of ``days`` only, when
    given: the days the peer lists), in time order."""
    by_day: dict[int, list[Window]] = {}
    for gap in sorted(found, key=lambda g: g.start):
        if peer in gap.filled_from or gap.end <= gap.start:
            continue
        start = gap.start
        while start < gap.end:
            end = min(gap.end, (start // DAY_MS + 1) * DAY_MS)
            if days is None or start // DAY_MS in days:
                pieces = by_day.setdefault(start // DAY_MS, [])
                if pieces and pieces[-1][1] == start:  # two gaps that touch: one time
                    pieces[-1] = (pieces[-1][0], end)
                else:
                    pieces.append((start, end))
            start = end
    return [Ask(tuple(by_day[day])) for day in sorted(by_day)]


def peer_name(url: str) -> str:
    """The peer as the ledger names it: ``scheme://host[:port][/path]``, without a login, a query or a
    trailing slash. Raises :class:`ChatlogError` (one line) for anything that is not an http(s) URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ChatlogError(f"--from: {url[:80]!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ChatlogError(f"--from: {url[:80]!r} is not an http(s) URL such as https://logs.example.com")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
