"""The web page of ``chatlog serve``: a small static app on the HTTP API (no build step, no CDN).

* ``GET /``: the page (``static/index.html``); its script reads the query (``?channel=``, ``&date=``,
  ``&user=``, ``&month=``, ``&q=``) and asks the API for the rest. A ``channel`` that is not logged is
  answered with the same page and status 404 (the page says why). For a channel's day (or a user's
  month), the answer's ``Link`` header has the browser preload the lines the script will ask for, so
  they come while the script loads.
* ``GET /static/...``: the page's script, style sheet and icon, shipped in this package; the page names
  them with a hash of their content (``?v=``), so they are cached for a day and a new version is fetched.

The data it shows comes from the API (:mod:`serve.api`), the gaps it marks included (``/web/gaps``,
:mod:`serve.api.gaps`).
"""

from __future__ import annotations

import calendar
import hashlib
import logging
import re
from importlib import resources
from os import PathLike, stat_result
from typing import Final

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import QueryParams
from starlette.responses import Response
from starlette.types import Scope

from core.logins import login_of

STATIC: Final = resources.files(__name__) / "static"
CSP: Final = (
    "default-src 'self'; img-src 'self' data: https://static-cdn.jtvnw.net; script-src 'self'; "
    "style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
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


def preload(query: QueryParams) -> str | None:
    """The URL (``?web``, the page's format) of the lines the page's script asks for first, when the
    query names them without another request: a channel's day (or its newest day), a user's month. None
    otherwise."""
    channel, user = ((query.get(key) or "").strip().lower() for key in ("channel", "user"))
    if not _LOGIN.fullmatch(channel) or query.get("q"):
        return None
    if user:
        month = _MONTH.fullmatch(query.get("month") or "")
        if not _LOGIN.fullmatch(user) or month is None or not 1 <= int(month[2]) <= 12:
            return None
        return f"/channel/{channel}/user/{user}/{int(month[1])}/{int(month[2])}?web"
    date = query.get("date")
    if not date:
        return f"/channel/{channel}?web"
    day = _DATE.fullmatch(date)
    if day is None or not 1 <= int(day[2]) <= 12:
        return None
    y, m, d = (int(part) for part in day.groups())
    if not 1970 <= y <= 9999 or not 1 <= d <= calendar.monthrange(y, m)[1]:
        return None
    return f"/channel/{channel}/{y}/{m}/{d}?web"


class Assets(StaticFiles):
    """The page's files, cached for a day (the page names each by its content's hash)."""

    def file_response(
        self, full_path: PathLike[str] | str, stat: stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        response = super().file_response(full_path, stat, scope, status_code)
        response.headers["Cache-Control"] = "public, max-age=86400"
        return response


def web_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)
    html = page_html()
    headers = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache"}

    @router.get("/", response_class=HTMLResponse)
    async def page(request: Request) -> HTMLResponse:
        channel = login_of(request.query_params.get("channel") or "")
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

    return router


def mount(app: FastAPI) -> None:
    """The page and its assets; before the log routes (``/{ct}/{c}`` would match ``/static/x``)."""
    app.mount("/static", Assets(directory=str(STATIC)), name="web-static")
    app.include_router(web_router())
