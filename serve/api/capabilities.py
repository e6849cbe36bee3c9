"""``GET /capabilities``: rustlog's list of optional features this server has (a JSON array of names),
also sent as the ``x-rustlog-capabilities`` header of every response, as rustlog does.

rustlog's names are ``arbitrary-range-query``, ``search``, ``stats`` and ``namehistory``; each is listed
only when the app has the route that serves it (in its OpenAPI document: the list follows what is
mounted), plus chatlog's own ``random`` and ``recent-messages``.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER: Final = b"x-rustlog-capabilities"
ROUTES: Final = {
    "arbitrary-range-query": "/{ct}/{c}",
    "search": "/{ct}/{c}/{ut}/{u}/search",
    "stats": "/{ct}/{c}/stats",
    "namehistory": "/namehistory/{user_id}",
    "random": "/{ct}/{c}/random",
    "recent-messages": "/api/v2/recent-messages/{login}",
    "live": "/api/live/{channel}",
}

router = APIRouter()


def capabilities(app: FastAPI) -> list[str]:
    """The names of :data:`ROUTES` whose route the app has (as its OpenAPI document lists them)."""
    paths = app.openapi().get("paths", {})
    return [name for name, path in ROUTES.items() if path in paths]


@router.get("/capabilities", summary="The optional features this server has (rustlog's names)")
async def get_capabilities(request: Request) -> JSONResponse:
    return JSONResponse(capabilities(request.app), headers={"Cache-Control": "public, max-age=60"})


class CapabilitiesHeader:
    """Adds ``x-rustlog-capabilities`` to every HTTP response (the list computed once, at the first)."""

    def __init__(self, app: ASGIApp, fastapi: FastAPI) -> None:
        self.app = app
        self.fastapi = fastapi
        self.value: bytes | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.value is None:
            self.value = ",".join(capabilities(self.fastapi)).encode()
        value = self.value

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), (HEADER, value)])
            await send(message)

        await self.app(scope, receive, sending)
