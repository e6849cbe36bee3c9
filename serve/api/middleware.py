"""Pure ASGI middleware. Path normalisation before routing: repeated slashes are one (as Go's mux cleans
them; ``//evil.com`` never reaches a ``Location``), a repeated query parameter is its first value (as
Go's ``Query().Get``), a trailing ``/`` is ignored (as rustlog does),
and a path with upper-case letters is redirected (302) to its lower-case form with the same query
(justlog). :class:`ResponseGuard`: ``nosniff``, HEAD, and streamed bodies that are cut. :class:`BodyLimit`:
no request body past a few KiB (the API's bodies are a few fields; uvicorn sets no limit)."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serve.errors import error_response

_KEEP_CASE: Final = ("/docs",)


_SLASHES: Final = re.compile("/{2,}")


def _first_values(query: bytes) -> bytes:
    """``query`` with only the first of each repeated parameter (Go's ``Query().Get``, which justlog's
    clients were written against, takes the first; Starlette's ``get`` the last)."""
    seen: set[bytes] = set()
    kept = []
    for pair in query.split(b"&"):
        name = pair.split(b"=", 1)[0]
        if name and name in seen:
            continue
        seen.add(name)
        kept.append(pair)
    return b"&".join(kept)


class _HttpMiddleware:
    """Middleware of HTTP requests: :meth:`http` sees each one; other scopes (lifespan) pass through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class NormalizePath(_HttpMiddleware):
    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_query: bytes = scope.get("query_string", b"")
        if b"&" in raw_query:
            first = _first_values(raw_query)
            if first != raw_query:
                scope = dict(scope, query_string=first)
        path: str = scope["path"]
        if "//" in path:  # as Go's mux cleans them: `//evil.com` must never become a Location
            path = _SLASHES.sub("/", path)
            scope = dict(scope, path=path, raw_path=path.encode())
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


class StreamCut(Exception):
    """A streamed body that cannot be finished (the storage failed after the status line was sent)."""


class _HeadDone(Exception):
    """A HEAD request's status line and headers are sent: the body is not made."""


NOSNIFF: Final = (b"x-content-type-options", b"nosniff")


class ResponseGuard(_HttpMiddleware):
    """Every response gets ``X-Content-Type-Options: nosniff`` (log lines are text anyone can write, never
    to be sniffed as HTML); HEAD is answered as GET with its status and headers but no body (the body is
    never made); and a streamed body cut by :class:`StreamCut` ends the connection without its last chunk,
    so the client sees an incomplete transfer, never a complete 200 that lacks lines (or a proxy caching
    one), and the log has the one line the body wrote, not a traceback."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        head = scope["method"] == "HEAD"
        if head:
            scope = dict(scope, method="GET")
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                await send(dict(message, headers=[*message.get("headers", []), NOSNIFF]))
                if head:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    raise _HeadDone
                return
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except _HeadDone:
            return
        except StreamCut:
            if not started:
                raise


MAX_BODY_BYTES: Final = 16 * 1024
"""The largest request body read: an admin call's JSON is ~100 bytes (a reason: at most 500 characters)."""


class _TooLarge(HTTPException):
    """Raised in the app's body read: FastAPI passes an HTTPException on (other errors there: its 400)."""


class BodyLimit(_HttpMiddleware):
    """A request whose body is over ``limit`` bytes is answered 413 before it is read through (by its
    ``Content-Length``, else once the chunks read pass the limit); nothing behind this sees it."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        super().__init__(app)
        self.limit = limit
        self._message = f"the request body is over {limit} bytes"

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope.get("headers", [])).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        seen = 0
        started = False

        async def reading() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(413, self._message)
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, reading, sending)
        except _TooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(413, self._message)(scope, receive, send)
