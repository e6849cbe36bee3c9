"""The web page of ``chatlog serve``: a small static app on the HTTP API (no build step, no CDN).

* ``GET /``: the page (``static/index.html``); its script reads the query (``?channel=``, ``&date=``,
  ``&user=``, ``&month=``, ``&q=``) and asks the API for the rest. A ``channel`` that is not logged is
  answered with the same page and status 404 (the page says why). For a channel's day (or a user's
  month), the answer's ``Link`` header has the browser preload the lines the script will ask for, so
  they come while the script loads.
* ``GET /static/...``: the page's script, style sheet and icon, shipped in this package; the page names
  them with a hash of their content (``?v=``), so they are cached for a day and a new version is fetched.
* ``GET /web/gaps?channel=&from=&to=``: the gaps in the channel's coverage (the coverage ledger, read
  through :mod:`serve.coverage`) in ``[from, to)`` (epoch ms), for the page to show where they fall:
  ``{"channel", "gaps": [{"start", "end", "why"}]}``; no gaps when the keyspace has no ledger.
"""

from __future__ import annotations

import asyncio
import calendar
import hashlib
import logging
import re
from importlib import resources
from os import PathLike, stat_result
from typing import Any, Final

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import QueryParams
from starlette.responses import Response
from starlette.types import Scope

from serve.api.errors import ApiError, bad_request
from serve.settings import ServeSettings

STATIC: Final = resources.files(__name__) / "static"
MAX_GAP_RANGE_MS: Final = 366 * 86_400_000
"""Longest range whose gaps are read (each UTC day is one ledger partition)."""
CSP: Final = (
    "default-src 'self'; img-src 'self' data: https://static-cdn.jtvnw.net; script-src 'self'; "
    "style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_MS: Final = re.compile(r"[0-9]{1,15}")
_LOGIN: Final = re.compile(r"[a-z0-9_]{1,64}")
"""Logins given as plain names, whose URL the page's script writes as this module does (no ``#`` or ``@``
to drop, nothing for encodeURIComponent to escape); the lines of others are not preloaded."""
_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_MONTH: Final = re.compile(r"([0-9]{4})-([0-9]{2})")
ASSETS: Final = ("app.js", "style.css", "theme.js", "icon.svg")
log = logging.getLogger("chatlog.serve")


def page_html() -> str:
    """index.html with each asset named by its content's hash (``/static/app.js?v=1a2b3c4d5e``)."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    for name in ASSETS:
        digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:10]
        html = html.replace(f'"/static/{name}"', f'"/static/{name}?v={digest}"')
    return html


def _name(value: str | None) -> str:
    return (value or "").strip().lstrip("#").lower()


def preload(query: QueryParams) -> str | None:
    """The ndjson URL of the lines the page's script asks for first, when the query names them without
    another request: a channel's day (or its newest day), a user's month. None otherwise."""
    channel, user = ((query.get(key) or "").strip().lower() for key in ("channel", "user"))
    if not _LOGIN.fullmatch(channel) or query.get("q"):
        return None
    if user:
        month = _MONTH.fullmatch(query.get("month") or "")
        if not _LOGIN.fullmatch(user) or month is None or not 1 <= int(month[2]) <= 12:
            return None
        return f"/channel/{channel}/user/{user}/{int(month[1])}/{int(month[2])}?ndjson"
    date = query.get("date")
    if not date:
        return f"/channel/{channel}?ndjson"
    day = _DATE.fullmatch(date)
    if day is None or not 1 <= int(day[2]) <= 12:
        return None
    y, m, d = (int(part) for part in day.groups())
    if not 1970 <= y <= 9999 or not 1 <= d <= calendar.monthrange(y, m)[1]:
        return None
    return f"/channel/{channel}/{y}/{m}/{d}?ndjson"


class Assets(StaticFiles):
    """The page's files, cached for a day (the page names each by its content's hash)."""

    def file_response(
        self, full_path: PathLike[str] | str, stat: stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        response = super().file_response(full_path, stat, scope, status_code)
        response.headers["Cache-Control"] = "public, max-age=86400"
        return response


def _ms(request: Request, name: str) -> int:
    value = request.query_params.get(name, "")
    if not _MS.fullmatch(value):
        raise bad_request(f"invalid {name}: expected epoch milliseconds")
    return int(value)


def web_router(settings: ServeSettings) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    html = page_html()
    headers = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache"}

    @router.get("/", response_class=HTMLResponse)
    async def page(request: Request) -> HTMLResponse:
        channel = _name(request.query_params.get("channel"))
        status = 200
        if channel:
            try:
                if await request.app.state.store.latest_day(channel) is None:
                    status = 404
            except Exception as exc:  # the page still loads; its script says what the API answers
                log.warning("web page: looking up #%s failed: %s", channel[:200], type(exc).__name__)
        lines = preload(request.query_params) if status == 200 else None
        sent = dict(headers, Link=f"<{lines}>; rel=preload; as=fetch; crossorigin") if lines else headers
        return HTMLResponse(html, status_code=status, headers=sent)

    @router.get("/web/gaps")
    async def gaps(request: Request) -> JSONResponse:
        channel = request.query_params.get("channel", "").strip().lstrip("#").lower()
        if not channel:
            raise bad_request("missing parameter: channel")
        lo, hi = _ms(request, "from"), _ms(request, "to")
        if lo >= hi:
            raise bad_request("invalid range: from is after to")
        if hi - lo > MAX_GAP_RANGE_MS:
            raise bad_request("invalid range: gaps are read for at most 366 days at once")
        found = await _read_gaps(request.app.state.store, settings.cassandra_keyspace, channel, lo, hi)
        return JSONResponse({"channel": channel, "gaps": found}, headers={"Cache-Control": "no-cache"})

    return router


async def _read_gaps(store: Any, keyspace: str, channel: str, lo: int, hi: int) -> list[dict[str, Any]]:
    """The gaps from the ledger over the store's session; none for a store without one (or a keyspace
    without a ledger); a 503 when Cassandra does not answer."""
    from serve.coverage import read_coverage

    session = getattr(store, "session", None)
    if session is None:
        return []
    try:
        coverage = await asyncio.to_thread(read_coverage, session, keyspace, channel, lo, hi)
    except Exception as exc:
        from cassandra import InvalidRequest

        if isinstance(exc, InvalidRequest):  # a keyspace made before the ledger existed
            return []
        log.warning("reading the coverage of #%s failed: %s: %s", channel[:200], type(exc).__name__, exc)
        raise ApiError(503, "the coverage ledger did not answer; try again") from None
    return [{"start": g.start, "end": g.end, "why": g.why} for g in coverage.gaps]


def mount(app: FastAPI, settings: ServeSettings) -> None:
    """The page, its assets and its gaps route; before the log routes (``/{ct}/{c}`` would match
    ``/web/gaps`` and ``/static/x``)."""
    app.mount("/static", Assets(directory=str(STATIC)), name="web-static")
    app.include_router(web_router(settings))
