"""The web page of ``chatlog serve``: a small static app on the HTTP API (no build step, no CDN).

* ``GET /``: the page (``static/index.html``); its script reads the query (``?channel=``, ``&date=``,
  ``&user=``, ``&month=``, ``&q=``) and asks the API for the rest. A ``channel`` that is not logged is
  answered with the same page and status 404 (the page says why).
* ``GET /static/...``: the page's script, style sheet and icon, shipped in this package.
* ``GET /web/gaps?channel=&from=&to=``: the gaps in the channel's coverage (the coverage ledger, read
  through :mod:`serve.coverage`) in ``[from, to)`` (epoch ms), for the page to show where they fall:
  ``{"channel", "gaps": [{"start", "end", "why"}]}``; no gaps when the keyspace has no ledger.
"""

from __future__ import annotations

import asyncio
import logging
import re
from importlib import resources
from typing import Any, Final

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

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
log = logging.getLogger("chatlog.serve")


def page_html() -> str:
    return (STATIC / "index.html").read_text(encoding="utf-8")


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
        channel = request.query_params.get("channel", "").strip().lstrip("#").lower()
        status = 200
        if channel:
            try:
                if await request.app.state.store.latest_day(channel) is None:
                    status = 404
            except Exception as exc:  # the page still loads; its script says what the API answers
                log.warning("web page: looking up #%s failed: %s", channel[:200], type(exc).__name__)
        return HTMLResponse(html, status_code=status, headers=headers)

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
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="web-static")
    app.include_router(web_router(settings))
