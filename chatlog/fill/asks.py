"""What to ask a peer for: the gaps not yet filled from it, one request per UTC day (pure logic).

A justlog/rustlog/chatlog peer serves a channel's UTC day at ``/channel/<login>/<y>/<m>/<d>`` (or
``/channelid/<id>/...``); ``?raw`` gives the IRC lines as received, and ``from``/``to`` (unix seconds, both
included) narrow it on chatlog. justlog reads ``from``/``to`` only on its ``/range`` routes, and rustlog's
log parameters have none: both answer the whole day, so the lines outside the time asked are left out here
(:mod:`chatlog.fill.accept`), never trusted to the peer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

from core.coverage_spans import Gap
from core.errors import ChatlogError
from core.times import utc_day
from schemas.coverage import DAY_MS


@dataclass(frozen=True)
class Ask:
    """The lines of ``[start, end)`` (epoch ms, within one UTC day) from the peer."""

    start: int
    end: int

    @property
    def from_s(self) -> int:
        """``from``: the unix second of the start."""
        return self.start // 1000

    @property
    def to_s(self) -> int:
        """``to``: the unix second of the last millisecond (justlog and chatlog include all of it)."""
        return (self.end - 1) // 1000

    @property
    def window(self) -> tuple[int, int]:
        """The times ``[lo, hi)`` (epoch ms) of the lines the answer may hold: whole seconds asked."""
        return self.from_s * 1000, (self.to_s + 1) * 1000

    def path(self, channel: str, channel_id: str | None = None) -> str:
        """``/channel/<c>/<y>/<m>/<d>?raw&from=<unix>&to=<unix>`` (``/channelid/<id>/...`` given an id)."""
        day = utc_day(self.start)
        who = (
            f"channelid/{quote(channel_id, safe='')}" if channel_id else f"channel/{quote(channel, safe='')}"
        )
        return f"/{who}/{day.year}/{day.month}/{day.day}?raw&from={self.from_s}&to={self.to_s}"


def asks(found: Iterable[Gap], peer: str) -> list[Ask]:
    """The times of ``found`` not filled from ``peer`` yet, cut at UTC midnights, in time order."""
    out: list[Ask] = []
    for gap in sorted(found, key=lambda g: g.start):
        if peer in gap.filled_from or gap.end <= gap.start:
            continue
        start = gap.start
        while start < gap.end:
            end = min(gap.end, (start // DAY_MS + 1) * DAY_MS)
            out.append(Ask(start, end))
            start = end
    return out


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
