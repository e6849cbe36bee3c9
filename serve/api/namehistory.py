"""``GET /namehistory/{user_id}``: the logins a Twitch user id had, as rustlog answers it.

rustlog (boring-nick/rustlog, ``src/web/schema.rs`` ``PreviousName``, ``src/db/mod.rs``
``get_user_name_history``) answers a JSON array with one object per login, fields in this order:
``user_login``, ``last_timestamp``, ``first_timestamp``; the times are chrono's ``DateTime<Utc>`` as
serde writes them: RFC 3339 in UTC with ``Z``, milliseconds only when not zero
(``2024-01-02T03:04:05Z``, ``2024-01-02T03:04:05.250Z``). It has no display names, so neither has this.

Here each login's rows of ``user_names`` (one per display name it was seen with) are merged: first seen
the earliest, last seen the latest. Newest first (by last seen; rustlog's order is the database's).
``first_timestamp`` is null when that sighting is older than the keyspace's retention (a TTL; rustlog
keeps everything). Times are precise to the hour, as the sink writes them (``chatlog names``).

Unlike rustlog, which answers 200 ``[]`` for any id it has no name for, an id with no history is a 404
and one that is not a Twitch id (digits) a 400, both in this API's JSON error style.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from core.times import naive_utc
from serve.api.named import store_of
from serve.errors import ApiError, bad_request, not_found
from store.names import NameSeen

MAX_ID_DIGITS: Final = 20
"""The longest user id taken (a 64-bit number); Twitch's have 6 to 10 digits."""
log = logging.getLogger("chatlog.serve")

router = APIRouter()


class PreviousName(BaseModel):
    """rustlog's ``PreviousName``."""

    user_login: str = Field(description="A login the user had.")
    last_timestamp: str | None = Field(description="When it was last seen: RFC 3339, UTC.")
    first_timestamp: str | None = Field(
        description="When it was first seen: RFC 3339, UTC; null when older than the logs' retention."
    )


class ErrorBody(BaseModel):
    status: int
    message: str


def rfc3339(ms: int | None) -> str | None:
    """Epoch ms as chrono serialises a ``DateTime<Utc>``: ``Z``, a fraction only when it is not zero."""
    if ms is None:
        return None
    moment = naive_utc(ms)
    fraction = f".{ms % 1000:03d}" if ms % 1000 else ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def _min(values: list[int | None]) -> int | None:
    return None if not values or None in values else min(v for v in values if v is not None)


def _max(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def previous_names(rows: Iterable[NameSeen]) -> list[dict[str, str | None]]:
    """rustlog's body from ``user_names`` rows: one entry per login, newest last seen first. A login's
    first seen is unknown (None) when one of its rows has lost it (expired)."""
    by_login: dict[str, list[NameSeen]] = {}
    for row in rows:
        by_login.setdefault(row.login, []).append(row)
    merged = [
        (login, _min([r.first_seen_ms for r in seen]), _max([r.last_seen_ms for r in seen]))
        for login, seen in by_login.items()
    ]
    merged.sort(key=lambda m: (m[2] if m[2] is not None else -1, m[1] if m[1] is not None else -1, m[0]))
    return [
        {"user_login": login, "last_timestamp": rfc3339(last), "first_timestamp": rfc3339(first)}
        for login, first, last in reversed(merged)
    ]


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


@router.get(
    "/namehistory/{user_id}",
    summary="The logins a Twitch user id had, with when each was first and last seen (rustlog's)",
    response_model=list[PreviousName],
    responses={
        400: _error("The id is not a Twitch user id (digits)."),
        404: _error("No login is known for this id."),
        503: _error("The log storage did not answer."),
    },
)
async def name_history(
    request: Request, user_id: Annotated[str, Path(description="A Twitch user id, e.g. 22484632.")]
) -> JSONResponse:
    the_id = user_id.strip()
    if not (the_id.isascii() and the_id.isdigit() and len(the_id) <= MAX_ID_DIGITS):
        raise bad_request(f"invalid user id {user_id[:40]!r}: a Twitch user id is 1-{MAX_ID_DIGITS} digits")
    store = store_of(request)
    try:
        rows = await store.user_name_history(the_id)
    except ApiError:  # the store's own answer (an opted-out id: a 403)
        raise
    except Exception as exc:
        log.warning("reading the name history failed: %s: %s", type(exc).__name__, str(exc)[:200])
        raise ApiError(503, "the log storage did not answer; try again") from None
    body = previous_names(rows)
    if not body:
        raise not_found(f"no name history for the user id {the_id!r}")
    return JSONResponse(body, headers={"Cache-Control": "no-cache"})
