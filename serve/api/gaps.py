"""``GET /web/gaps?channel=&from=&to=``: the gaps in a channel's coverage, for the web page to show where
they fall.

The coverage ledger (read through :mod:`serve.coverage` over the store's Cassandra session) in
``[from, to)`` (epoch ms): ``{"channel", "gaps": [{"start", "end", "why", "filled_from"}]}``, where
``filled_from`` lists the peers whose lines of that time were imported (``chatlog fill``; empty: none);
no gaps when the store has no session or the keyspace no ledger; a 503 when Cassandra does not answer.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from core.logins import login_of
from serve.errors import ApiError, bad_request
from serve.settings import ServeSettings
from store.protocol import LogStore

MAX_GAP_RANGE_MS: Final = 366 * 86_400_000
"""Longest range whose gaps are read (each UTC day is one ledger partition)."""
_MS: Final = re.compile(r"[0-9]{1,15}")
log = logging.getLogger("chatlog.serve")


def _ms(request: Request, name: str) -> int:
    value = request.query_params.get(name, "")
    if not _MS.fullmatch(value):
        raise bad_request(f"invalid {name}: expected epoch milliseconds")
    return int(value)


def gaps_router(settings: ServeSettings) -> APIRouter:
    """The route; before the log routes (``/{ct}/{c}`` would match ``/web/gaps``)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/web/gaps")
    async def gaps(request: Request) -> JSONResponse:
        channel = login_of(request.query_params.get("channel", ""))
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


async def _read_gaps(store: LogStore, keyspace: str, channel: str, lo: int, hi: int) -> list[dict[str, Any]]:
    """The gaps from the ledger over the store's session; none for a store without one (or a keyspace
    without a ledger); a 503 when Cassandra does not answer."""
    from serve.coverage import read_coverage

    session = store.session
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
    return [
        {"start": g.start, "end": g.end, "why": g.why, "filled_from": list(g.filled_from)}
        for g in coverage.gaps
    ]
