"""Path normalisation before routing (pure ASGI): a trailing ``/`` is ignored (as rustlog does), and a
path with upper-case letters is redirected (302) to its lower-case form with the same query (justlog)."""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from starlette.types import ASGIApp, Receive, Scope, Send

_KEEP_CASE: Final = ("/docs",)


class NormalizePath:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"
            scope = dict(scope, path=path, raw_path=path.encode())
        if path != path.lower() and not path.startswith(_KEEP_CASE):
            query = scope.get("query_string", b"").decode("latin-1")
            location = quote(path.lower(), safe="/:@!$&'()*+,;=-._~") + (f"?{query}" if query else "")
            await send(
                {
                    "type": "http.response.start",
                    "status": 302,
                    "headers": [
                        (b"location", location.encode("latin-1", "replace")),
                        (b"access-control-allow-origin", b"*"),
                        (b"content-length", b"0"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)
