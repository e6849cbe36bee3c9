"""``GET /api/v2/recent-messages/{login}``: recent-messages2's endpoint, so a chat client (Chatterino)
configured with chatlog's URL gets a channel's history on join (lines shaped by :mod:`serve.recent`).

* Answer: ``{"messages": [raw IRC lines, oldest first], "error": null, "error_code": null}``. A channel
  with nothing stored answers as recent-messages2 does for a channel it has not joined: 200, no messages,
  ``error_code`` ``channel_not_joined``.
* ``limit``: the newest N exported events, at most (and by default) :data:`MAX_LIMIT`, recent-messages2's
  default buffer size. ``before`` / ``after``: epoch milliseconds, exclusive, compared with the time the
  event was sent (the tables' order; recent-messages2 compares its receive time, a few ms later).
  Without ``after``, only the :data:`HORIZON_MS` (24 h, recent-messages2's default expiry) before
  ``before`` (or now) are read, so a client paging back with ``before`` still gets a day's history.
* The flags accept ``true``/``false`` (recent-messages2) and ``1``/``0``, and its v1 camelCase names.
* A bad parameter: 400 with recent-messages2's error body (``error_code`` ``invalid_query``; a bad login:
  ``invalid_channel_login``).
"""

from __future__ import annotations

import logging
import re
from typing import Annotated, Final

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import QueryParams

from core.times import now_ms
from schemas.chat_event import MAX_LOGIN_CHARS, ChatEvent
from serve.api.named import store_of
from serve.api.params import MAX_MS
from serve.errors import ApiError
from serve.recent import RecentOptions, export_lines, exported
from store.line import aclose, each_line
from store.protocol import LogStore

MAX_LIMIT: Final = 500
HORIZON_MS: Final = 86_400_000
NOT_JOINED: Final = "The bot is currently not joined to this channel (in progress or failed previously)"
_BAD_LOGIN: Final = re.compile(r"[\s,#\x00-\x1f\x7f]")
_MS: Final = re.compile(r"-?[0-9]{1,16}")
_TRUE: Final = ("true", "1")
_FALSE: Final = ("false", "0")
log = logging.getLogger("chatlog.serve")

router = APIRouter()

Flag = Annotated[str | None, Query(description="`true` or `false` (default).")]
Millis = Annotated[str | None, Query(description="Epoch milliseconds (exclusive).")]


def _invalid(message: str) -> ApiError:
    return ApiError(400, message, code="invalid_query")


def _flag(query: QueryParams, name: str, alias: str) -> bool:
    value = query.get(name, query.get(alias))
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise _invalid(f"Invalid or missing query parameters: {name} must be true or false")


def _millis(query: QueryParams, name: str) -> int | None:
    value = query.get(name)
    if value is None:
        return None
    if not _MS.fullmatch(value):
        raise _invalid(f"Invalid or missing query parameters: {name} must be epoch milliseconds")
    return min(max(int(value), 0), MAX_MS)


def _limit(query: QueryParams) -> int:
    value = query.get("limit")
    if value is None:
        return MAX_LIMIT
    if not value.isascii() or not value.isdigit() or len(value) > 16:
        raise _invalid("Invalid or missing query parameters: limit must be a whole number >= 0")
    return min(int(value), MAX_LIMIT)


def _login(value: str) -> str:
    login = value.strip().lower()
    if not login or len(login) > MAX_LOGIN_CHARS or _BAD_LOGIN.search(login):
        raise ApiError(400, f"Invalid channel login: {value[:40]!r}", code="invalid_channel_login")
    return login


async def _newest(store: LogStore, channel: str, lo: int, hi: int, limit: int) -> list[ChatEvent]:
    """The newest ``limit`` exported events of ``channel`` in ``[lo, hi)``, oldest first."""
    found: list[ChatEvent] = []
    if limit <= 0 or lo >= hi:
        return found
    lines = each_line(store.channel_runs(channel, lo, hi, reverse=True))
    try:
        async for line in lines:
            event = line.event
            if exported(event):
                found.append(event)
                if len(found) >= limit:
                    break
    finally:
        await aclose(lines)
    found.reverse()
    return found


@router.get(
    "/api/v2/recent-messages/{login}",
    summary="A channel's recent messages as raw IRC lines (recent-messages2's API)",
    tags=["recent-messages"],
)
async def recent_messages(
    request: Request,
    login: Annotated[str, Path(description="The channel's login.")],
    limit: Annotated[
        str | None, Query(description=f"Newest N messages (default and most: {MAX_LIMIT}).")
    ] = None,
    before: Millis = None,
    after: Millis = None,
    hide_moderation_messages: Flag = None,
    hide_moderated_messages: Flag = None,
    clearchat_to_notice: Flag = None,
) -> JSONResponse:
    query = request.query_params
    channel = _login(login)
    options = RecentOptions(
        hide_moderation_messages=_flag(query, "hide_moderation_messages", "hideModerationMessages"),
        hide_moderated_messages=_flag(query, "hide_moderated_messages", "hideModeratedMessages"),
        clearchat_to_notice=_flag(query, "clearchat_to_notice", "clearchatToNotice"),
    )
    count = _limit(query)
    before_ms, after_ms = _millis(query, "before"), _millis(query, "after")
    hi = before_ms if before_ms is not None else MAX_MS
    lo = after_ms + 1 if after_ms is not None else (before_ms or now_ms()) - HORIZON_MS
    store = store_of(request)
    try:
        if await store.latest_day(channel) is None:
            return JSONResponse({"messages": [], "error": NOT_JOINED, "error_code": "channel_not_joined"})
        events = await _newest(store, channel, max(lo, 0), hi, count)
    except ApiError:
        raise
    except Exception as exc:
        log.warning("reading recent messages failed: %s: %s", type(exc).__name__, str(exc)[:200])
        raise ApiError(503, "the log storage did not answer; try again", code="storage_unavailable") from None
    body = {"messages": export_lines(events, options), "error": None, "error_code": None}
    return JSONResponse(body, headers={"Cache-Control": "no-cache"})
