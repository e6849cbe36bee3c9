"""The justlog/rustlog routes (``{ct}`` = ``channel`` | ``channelid``, ``{ut}`` = ``user`` | ``userid``).

* ``GET /channels``: ``{"channels": [{"name", "userID"}]}``.
* ``GET /list?channel=|channelid=[&user=|userid=]``: ``{"availableLogs": [{"year", "month"[, "day"]}]}``,
  newest first, numbers as strings without zero padding (rustlog); 404 when there is none.
* ``GET /{ct}/{c}``: 302 to the newest day (``/{ct}/{c}/{y}/{m}/{d}``, query kept), or, with ``from``
  or ``to``, that range's logs.
* ``GET /{ct}/{c}/{y}/{m}/{d}``: a UTC day of the channel.
* ``GET /{ct}/{c}/{ut}/{u}``: 302 to the newest month of the user, or, with ``from``/``to``, that range.
* ``GET /{ct}/{c}/{ut}/{u}/{y}/{m}``: a UTC month of a user in the channel.

``from``/``to`` on a day or month narrow it. An unknown channel or user, or nothing in the range, is a
404 with a JSON message; a bad parameter a 400 that names it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

from core.times import now_ms
from serve.api.named import (
    CHANNEL_KINDS,
    USER_KINDS,
    Subject,
    resolve_channel,
    resolve_user,
    segment,
    store_of,
    user_by_id_unnamed,
)
from serve.api.params import LogQuery, day_range, log_query, month_range, narrowed
from serve.api.query_docs import FORMATS, PAGING, RANGE, documented, path
from serve.api.stream import answer_lines
from serve.errors import ApiError, bad_request, not_found

router = APIRouter()


def _path(request: Request, *names: str) -> list[str]:
    """The path parameters ``names`` of the route (read here, not by FastAPI: see
    :mod:`serve.api.query_docs`)."""
    params = request.path_params
    return [params[name] for name in names]


def _redirect(request: Request, *segments: object) -> RedirectResponse:
    """A 302 to the path of ``segments`` (each quoted whole: a name's ``#`` or ``/`` stays in its segment),
    with the request's query."""
    query = request.url.query
    path = "".join(f"/{quote(str(part), safe='')}" for part in segments)
    return RedirectResponse(path + (f"?{query}" if query else ""), status_code=302)


async def _lines(request: Request, subject: Subject, lo: int, hi: int, query: LogQuery) -> Response:
    """The subject's lines in ``[lo, hi)`` as ``query`` asks (:func:`answer_lines`); a 404 for none."""
    return await answer_lines(
        request,
        subject.runs(store_of(request), lo, hi, reverse=query.reverse),
        query,
        hi,
        _nothing_stored(subject),
    )


def _nothing_stored(subject: Subject) -> str:
    return f"nothing stored for {subject} in that time range"


async def _latest(request: Request, subject: Subject, *where: str) -> Response:
    """With ``from`` or ``to``: the subject's lines in that range; else a 302 to its newest period (a
    channel's day, a user's month) under ``where``, the path that names it."""
    query = log_query(request.query_params)
    if query.since_ms is not None or query.until_ms is not None:
        lo, hi = narrowed(0, now_ms() + 1, query)
        return await _lines(request, subject, lo, hi, query)
    newest = await subject.newest(store_of(request))
    if newest is None:
        if subject.user is None:
            raise not_found(f"channel {subject.channel!r} is not logged")
        raise not_found(f"nothing stored for {subject}")
    return _redirect(request, *where, *newest)


@router.get("/channels", summary="The logged channels: {channels: [{name, userID}]}")
async def channels(request: Request) -> JSONResponse:
    found = await store_of(request).channels()
    body = {"channels": [{"name": c.login, "userID": c.channel_id or ""} for c in found]}
    return JSONResponse(body, headers={"Cache-Control": "public, max-age=60"})


@router.get("/list", summary="The days (of a channel) or months (of a user in it) with logs, newest first")
async def list_logs(
    request: Request,
    channel: str | None = None,
    channelid: str | None = None,
    user: str | None = None,
    userid: str | None = None,
) -> JSONResponse:
    if channelid:
        login = await resolve_channel(request, "channelid", channelid)
    elif channel:
        login = await resolve_channel(request, "channel", channel)
    else:
        raise bad_request("missing parameter: channel or channelid")
    store = store_of(request)
    if user or userid:
        who = await resolve_user(request, login, "userid" if userid else "user", userid or user or "")
        months = await store.user_months(login, who)
        if not months:
            raise not_found(f"nothing stored for {who} in #{login}")
        logs: list[dict[str, str]] = [{"year": str(y), "month": str(m)} for y, m in months]
    else:
        days = await store.channel_days(login)
        logs = [{"year": str(d.year), "month": str(d.month), "day": str(d.day)} for d in days]
    return JSONResponse({"availableLogs": logs}, headers={"Cache-Control": "public, max-age=60"})


@router.get(
    "/{ct}/{c}",
    summary="Redirect to the channel's newest day (or, with from/to, that range)",
    openapi_extra=documented(path("ct", "c"), FORMATS, PAGING, RANGE),
)
async def channel_latest(request: Request) -> Response:
    ct, c = _path(request, "ct", "c")
    channel = await resolve_channel(request, ct, c)
    return await _latest(request, Subject(channel), ct, segment(channel))


CHANNEL_DAY = "/{ct}/{c}/{y}/{m}/{d}"


@router.get(
    CHANNEL_DAY,
    summary="A UTC day of the channel's logs",
    openapi_extra=documented(path("ct", "c", "y", "m", "d"), FORMATS, PAGING, RANGE),
)
async def channel_day(request: Request) -> Response:
    ct, c, y, m, d = _path(request, "ct", "c", "y", "m", "d")
    if ct in CHANNEL_KINDS and y in USER_KINDS:
        raise not_found("no such route")
    channel = await resolve_channel(request, ct, c)
    query = log_query(request.query_params)
    lo, hi = narrowed(*day_range(y, m, d), query)
    return await _lines(request, Subject(channel), lo, hi, query)


@router.get(
    "/{ct}/{c}/{ut}/{u}",
    summary="Redirect to the user's newest month (or, with from/to, that range)",
    openapi_extra=documented(path("ct", "c", "ut", "u")),
)
async def user_latest(request: Request) -> Response:
    ct, c, ut, u = _path(request, "ct", "c", "ut", "u")
    channel = await resolve_channel(request, ct, c)
    user = await resolve_user(request, channel, ut, u)
    return await _latest(request, Subject(channel, user), ct, segment(channel), ut, segment(user))


USER_MONTH = "/{ct}/{c}/{ut}/{u}/{y}/{m}"


@router.get(
    USER_MONTH,
    summary="A UTC month of a user's logs in the channel",
    openapi_extra=documented(path("ct", "c", "ut", "u", "y", "m"), FORMATS, PAGING, RANGE),
)
async def user_month(request: Request) -> Response:
    ct, c, ut, u, y, m = _path(request, "ct", "c", "ut", "u", "y", "m")
    channel = await resolve_channel(request, ct, c)
    unnamed = user_by_id_unnamed(ut, u)
    user = unnamed or await resolve_user(request, channel, ut, u)
    query = log_query(request.query_params)
    lo, hi = narrowed(*month_range(y, m), query)
    try:
        return await _lines(request, Subject(channel, user), lo, hi, query)
    except ApiError as e:
        if unnamed is None or e.status != 404:
            raise
    named = await resolve_user(request, channel, ut, u)  # nothing found: which 404 (an unknown id?)
    raise not_found(_nothing_stored(Subject(channel, named)))


class _EarlyRoute(Route):
    """A plain Starlette route: no FastAPI parameter solving, dependencies or exit stack around an endpoint
    that reads its request itself (~25 us of a ~175 us small answer). It takes GETs only (a HEAD is a GET
    by then, :class:`~serve.api.middleware.ResponseGuard`) of paths under ``/channel/`` or ``/channelid/``,
    and with ``digits_last`` only those whose last segment is digits: anything else goes on to the routes
    after it, and the documented route (its 404 or 405, say). It is the scope's ``route``, as an APIRoute
    is (the metrics' route template)."""

    def __init__(
        self, path: str, endpoint: Callable[[Request], Awaitable[Response]], *, digits_last: bool
    ) -> None:
        super().__init__(path, endpoint, methods=["GET"], include_in_schema=False)
        self.digits_last = digits_last

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope.get("method") != "GET":
            return Match.NONE, {}
        path: str = scope["path"]
        if path.split("/", 2)[1] not in CHANNEL_KINDS:
            return Match.NONE, {}
        if self.digits_last and not _DIGITS.fullmatch(path.rpartition("/")[2]):
            return Match.NONE, {}
        match, child_scope = super().matches(scope)
        if match is Match.FULL:
            child_scope["route"] = self
        return match, child_scope


_DIGITS: Final = re.compile("[0-9]+")


def add_early_routes(app: FastAPI) -> None:
    """The user-month and channel-day routes (the reads most asked) once more, undocumented, first of the
    app's routes (matching a path against the ten routers and the mounts ahead of the log routes cost ~60
    us of a ~220 us small answer), as plain routes (:class:`_EarlyRoute`). Call it once every route is
    added. No route before :data:`router`'s copies matches a path they take: under ``/channel/`` or
    ``/channelid/`` there are none but the routes of five segments that end in a word (``/random``,
    ``/search``, ``/stats``; the day's copy takes a last segment of digits only);
    tests/unit/serve/api/test_routes_early.py checks it. So every path is answered by the same endpoint as
    without them, and the document lists each route once, where it was."""
    app.router.routes[0:0] = [
        _EarlyRoute(USER_MONTH, user_month, digits_last=False),
        _EarlyRoute(CHANNEL_DAY, channel_day, digits_last=True),
    ]


__all__ = ["ApiError", "router"]
