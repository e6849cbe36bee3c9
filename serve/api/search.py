"""Search routes: case-insensitive substring search, answered as the scan finds (:mod:`serve.search`).

* ``GET /{ct}/{c}/{ut}/{u}/search?q=``: rustlog's search, every line of the user in the channel whose text
  contains ``q`` (case-insensitive), oldest first (``?reverse``: newest first); its whole history, or
  ``from``/``to`` when given.
* ``GET /{ct}/{c}/search?q=&from=&to=``: the same over the channel's lines in a time range: ``to``
  defaults to now, ``from`` to ``serve_search_default_days`` before ``to``; a range longer than
  ``serve_search_max_days`` is a 400 (a scan reads every line of it).

Formats, ``limit`` and ``offset`` as on the log routes (:mod:`serve.api.stream`); the scan stops once
``offset + limit`` hits are sent. No hit is a 404 (as rustlog), saying whether the user has no logs at all;
an empty ``q`` or one over ``serve_search_max_query_chars`` characters is a 400.

* ``GET /admin/user/{u}/search[?q=]&from=&to=``: a user's lines (those containing ``q`` when given) in
  every logged channel, channel after channel (by login; ``?reverse``: the other way round, each newest
  first), over a channel search's range. Only with ``Authorization: Bearer <CHATLOG_SERVE_ADMIN_KEY>``
  (401 without, 403 with a wrong key or when none is set): following one person across channels is what
  justlog #151 asks loggers not to offer to everyone.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from typing import Annotated, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from core.times import now_ms
from serve.api.named import resolve_subject, store_of
from serve.api.params import LogQuery, empty_range, log_query, narrowed
from serve.api.query_docs import FORMATS, PAGING, RANGE, documented
from serve.api.stream import answer_lines, line_counter, stream_events
from serve.errors import ApiError, bad_request, not_found
from serve.search import BadQuery, Needle, matching, needle
from serve.settings import ServeSettings
from store.line import Run

DAY_MS: Final = 86_400_000
_SHOWN: Final = 40

Q = Annotated[str | None, Query(description="Text to find, case-insensitive (one substring, spaces kept).")]


def _needle(request: Request, settings: ServeSettings) -> Needle:
    limit = settings.serve_search_max_query_chars
    try:
        return needle(request.query_params.get("q"), max_chars=limit)
    except BadQuery as exc:
        raise bad_request(str(exc)) from None


def _shown(query: str) -> str:
    return repr(query if len(query) <= _SHOWN else query[: _SHOWN - 3] + "...")


def search_router(settings: ServeSettings) -> APIRouter:
    """The search routes, bounded by ``settings``."""
    router = APIRouter()

    @router.get(
        "/{ct}/{c}/{ut}/{u}/search",
        summary="Lines of a user in the channel that contain q",
        openapi_extra=documented(FORMATS, PAGING, RANGE),
    )
    async def search_user(request: Request, ct: str, c: str, ut: str, u: str, q: Q = None) -> Response:
        return await _search(request, settings, ct, c, ut, u)

    @router.get(
        "/{ct}/{c}/search",
        summary="Lines of the channel in a time range that contain q",
        openapi_extra=documented(FORMATS, PAGING, RANGE),
    )
    async def search_channel(request: Request, ct: str, c: str, q: Q = None) -> Response:
        return await _search(request, settings, ct, c)

    @router.get(
        "/admin/user/{u}/search",
        summary="Admin: lines of a user across every logged channel in a time range (q optional)",
        openapi_extra=documented(FORMATS, PAGING, RANGE),
    )
    async def search_user_everywhere(
        request: Request,
        u: str,
        q: Q = None,
    ) -> Response:
        check_admin(request.headers.get("authorization"), settings)
        wanted = _needle(request, settings) if request.query_params.get("q") is not None else None
        user = u.strip().lstrip("@").lower()
        if not user:
            raise not_found("empty user name")
        query = log_query(request.query_params)
        lo, hi = channel_range(query, settings, now_ms())
        store = store_of(request)
        channels = [c.login for c in await store.channels()]
        if query.reverse:
            channels.reverse()

        async def everywhere() -> AsyncIterator[Run]:
            for channel in channels:
                runs = store.user_runs(channel, user, lo, hi, reverse=query.reverse)
                async for run in matching(runs, wanted) if wanted else runs:
                    yield run

        headers = {"Cache-Control": "no-store"}
        empty = f"nothing of {user} in any channel in that range" + (
            f" contains {_shown(wanted.query)}" if wanted else ""
        )
        return await stream_events(
            everywhere(), query, empty=empty, count=line_counter(request, query), headers=headers
        )

    return router


def check_admin(authorization: str | None, settings: ServeSettings) -> None:
    """401 without a bearer key, 403 with a wrong one or when no admin key is set. The key is compared
    in constant time and never repeated in an answer or a log."""
    key = settings.serve_admin_key
    if key is None or not key.get_secret_value():
        raise ApiError(403, "admin routes are disabled (CHATLOG_SERVE_ADMIN_KEY is not set)")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ApiError(401, "admin route: send the header 'Authorization: Bearer <admin key>'")
    if not hmac.compare_digest(given.strip().encode(), key.get_secret_value().encode()):
        raise ApiError(403, "admin route: wrong key")


def channel_range(query: LogQuery, settings: ServeSettings, now_ms: int) -> tuple[int, int]:
    """``[lo, hi)`` of a channel search: ``to`` (included) else now, ``from`` else the default span
    before; 400 when it is empty or longer than ``serve_search_max_days``."""
    hi = query.until_ms + 1 if query.until_ms is not None else now_ms + 1
    lo = query.since_ms if query.since_ms is not None else hi - settings.serve_search_default_days * DAY_MS
    lo = max(lo, 0)
    if lo >= hi:
        raise empty_range(query)
    most = settings.serve_search_max_days
    if hi - lo > most * DAY_MS + 1:  # `to` is included: Monday 00:00 to the next Monday 00:00 is 7 days
        days = (hi - lo) / DAY_MS
        raise bad_request(
            f"invalid range: {days:.1f} days; a channel search scans at most {most} days "
            "(give from and to closer together)"
        )
    return lo, hi


async def _search(
    request: Request, settings: ServeSettings, ct: str, c: str, ut: str | None = None, u: str | None = None
) -> Response:
    """The lines of the subject of ``/{ct}/{c}[/{ut}/{u}]`` (:func:`resolve_subject`) that contain ``q``: a
    user's over their whole history (or ``from``/``to``), a channel's over :func:`channel_range` (a scan
    reads every line of it). None is a 404, which for a user says whether they have any logs at all."""
    wanted = _needle(request, settings)
    subject = await resolve_subject(request, ct, c, ut, u)
    query = log_query(request.query_params)
    if subject.user is None:
        lo, hi = channel_range(query, settings, now_ms())
    else:
        lo, hi = narrowed(0, now_ms() + 1, query)
    store = store_of(request)
    events = matching(subject.runs(store, lo, hi, reverse=query.reverse), wanted)
    within = " in that range" if subject.user is None else ""
    shown = _shown(request.query_params.get("q", ""))
    try:
        return await answer_lines(
            request, events, query, hi, f"no line of {subject}{within} contains {shown}"
        )
    except ApiError as exc:
        if subject.user is None or exc.status != 404 or await subject.newest(store) is not None:
            raise
        raise not_found(f"nothing stored for {subject}") from None
