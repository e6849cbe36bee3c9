"""``GET /{ct}/{c}/stats`` and ``GET /{ct}/{c}/{ut}/{u}/stats``: rustlog's stats (shapes in
:mod:`serve.stats`), over ``from``/``to`` (unix seconds or RFC 3339, as the log routes).

What the tables answer cheaply, and so what is served:

* A user's count is counted by Cassandra (``COUNT(*)`` over the user's pointer partitions, four a month;
  no row leaves the server): any range, all of time by default, as rustlog.
* A channel's count and top chatters need every event's sender: each stored line is streamed and its
  sender read from it here. The range defaults to the last :data:`DEFAULT_CHANNEL_DAYS` days (rustlog:
  all of time), and a range holding more than :data:`MAX_COUNTED` events is refused (400, "narrow
  from/to") after that many, so one request costs at most that many rows read.
"""

from __future__ import annotations

import logging
from typing import Annotated, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from core.times import now_ms
from serve.api.named import resolve_channel, resolve_user, store_of
from serve.api.params import log_query, narrowed
from serve.errors import ApiError, bad_request, not_found
from serve.stats import TooManyEvents, tally, user_stats

DEFAULT_CHANNEL_DAYS: Final = 30
MAX_COUNTED: Final = 2_000_000
log = logging.getLogger("chatlog.serve")

router = APIRouter()

From = Annotated[str | None, Query(alias="from", description="Unix seconds or RFC 3339.")]
To = Annotated[str | None, Query(description="Unix seconds or RFC 3339 (included).")]


def _range(request: Request, default_lo: int) -> tuple[int, int]:
    now = now_ms()
    return narrowed(default_lo, now + 1, log_query(request.query_params))


def _unavailable(exc: Exception) -> ApiError:
    log.warning("counting failed: %s: %s", type(exc).__name__, str(exc)[:200])
    return ApiError(503, "the log storage did not answer; try again")


@router.get("/{ct}/{c}/stats", summary="A channel's event count and top chatters over from/to")
async def channel_stats(request: Request, ct: str, c: str, from_: From = None, to: To = None) -> JSONResponse:
    channel = await resolve_channel(request, ct, c)
    query = log_query(request.query_params)
    default_lo = 0 if query.since_ms is not None else now_ms() - DEFAULT_CHANNEL_DAYS * 86_400_000
    lo, hi = _range(request, default_lo)
    store = store_of(request)
    try:
        counted = await tally(store.senders(channel, lo, hi), MAX_COUNTED)
    except TooManyEvents:
        raise bad_request(
            f"#{channel} has more than {MAX_COUNTED:,} events in that range: narrow from/to"
        ) from None
    except Exception as exc:
        raise _unavailable(exc) from None
    return JSONResponse(counted.channel_stats(), headers={"Cache-Control": "no-cache"})


@router.get("/{ct}/{c}/{ut}/{u}/stats", summary="A user's event count in the channel over from/to")
async def user_stats_route(
    request: Request, ct: str, c: str, ut: str, u: str, from_: From = None, to: To = None
) -> JSONResponse:
    channel = await resolve_channel(request, ct, c)
    user = await resolve_user(request, channel, ut, u)
    lo, hi = _range(request, 0)
    store = store_of(request)
    try:
        count, user_id = await store.user_count(channel, user, lo, hi)
        if not count and await store.latest_user_month(channel, user) is None:
            raise not_found(f"nothing stored for {user} in #{channel}")  # as every user route answers
    except ApiError:
        raise
    except Exception as exc:
        raise _unavailable(exc) from None
    return JSONResponse(user_stats(str(user), user_id, count), headers={"Cache-Control": "no-cache"})
