"""The days a peer has of a channel: its ``/list`` (justlog's, rustlog's and chatlog's route, one shape).

``GET /list?channel=<login>`` (or ``?channelid=<id>``) answers ``{"availableLogs": [{"year": "2025",
"month": "3", "day": "5"}, ...]}`` (strings; newest first on justlog and rustlog), and 404 when the peer
has nothing of the channel. An entry without ``day`` (the shape of a user's months) stands for its whole
month.
"""

from __future__ import annotations

import calendar
from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from chatlog.fill.peer import PeerFailed, json_answer
from core.errors import one_line

if TYPE_CHECKING:
    import httpx

EPOCH = date(1970, 1, 1)


def list_path(channel: str, channel_id: str | None = None) -> str:
    """``/list?channel=<login>``, or ``/list?channelid=<id>`` given an id."""
    return (
        f"/list?channelid={quote(channel_id, safe='')}" if channel_id else f"/list?channel={quote(channel)}"
    )


def listed_days(body: Any) -> set[int]:
    """The UTC days (days since the epoch) of a ``/list`` answer; raises ValueError saying in one line
    what is not of that shape."""
    logs = body.get("availableLogs") if isinstance(body, dict) else None
    if not isinstance(logs, list):
        raise ValueError(f"not {{'availableLogs': [...]}}: {one_line(repr(body), 80)}")
    out: set[int] = set()
    for entry in logs:
        if not isinstance(entry, dict):
            raise ValueError(f"an entry is not an object: {one_line(repr(entry), 80)}")
        try:
            year, month = int(entry["year"]), int(entry["month"])
            days = [int(entry["day"])] if entry.get("day") not in (None, "") else None
            last = calendar.monthrange(year, month)[1]
            for day in days or range(1, last + 1):
                out.add((date(year, month, day) - EPOCH).days)
        except (KeyError, TypeError, ValueError, calendar.IllegalMonthError) as exc:
            raise ValueError(f"an entry is not a date ({exc}): {one_line(repr(entry), 80)}") from None
    return out


def peer_days(http: httpx.Client, peer: str, channel: str, channel_id: str | None = None) -> set[int]:
    """The days the peer lists for the channel (none: it has nothing of it). Raises :class:`PeerFailed`."""
    url = peer + list_path(channel, channel_id)
    body = json_answer(http, url, missing="has no logs of the channel")
    if body is None:
        return set()
    try:
        return listed_days(body)
    except ValueError as exc:
        raise PeerFailed(f"answered {list_path(channel, channel_id)} with {exc}") from None
