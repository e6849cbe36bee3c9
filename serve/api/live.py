"""``GET /api/live/{channel}[?user=LOGIN]``: a channel's new events as they are logged, as Server-Sent Events.

Each event is ``id: <message_id>`` and ``data: <one JSON message>``: the shape of one element of the
``?json`` format's ``messages`` (``text``, ``displayName``, ``timestamp``, ``id``, ``tags``, ``username``,
``channel``, ``raw``, ``type``, ``systemText``), whose ``id`` is the event's message id, with the web
page's ``action`` and ``deletedText``. A comment every
``CHATLOG_SERVE_LIVE_PING_S`` (15 s) keeps the connection open through proxies. A subscriber that falls a
whole queue behind gets ``event: dropped`` (``data: {"message": ...}``) and the stream ends (a browser's
``EventSource`` reconnects by itself); so does every stream when the server stops.

Only events logged after the subscription are sent: the page reads the past through the log routes.
``?user=`` keeps the user's lines (sent by them, or a ban, timeout or deleted message of theirs).

A malformed channel or user name, or a channel that is not logged, is a 400; Kafka not reachable (or too
many subscribers) a 503, as the API's JSON errors (``{"status", "message"}``, one line).

The Kafka side is :mod:`serve.live`: one consumer per process, started by the first subscriber and
stopped when the app stops (this router's lifespan, merged into the app's by ``include_router``).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.background import BackgroundTask

from consent.rule import SeenLogins
from core.errors import ChatlogError, one_line
from core.logins import login_of
from core.settings import load
from schemas.chat_event import MAX_LOGIN_CHARS
from serve.consent import OptedOut, hidden
from serve.errors import error_response
from serve.formats import encode_json
from serve.live import LiveHub, LiveUnavailable, Subscriber
from serve.settings import LiveSettings

log = logging.getLogger(__name__)

PATH: Final = "/api/live/{channel}"
_NAME: Final = re.compile(rf"[^\s,\x00-\x1f\x7f/#]{{1,{MAX_LOGIN_CHARS}}}")
"""A channel or user login as the chat event has them: no spaces, commas or control characters (what an
IRC channel name cannot hold), at most the event's bound."""
_SHOWN: Final = 40
_KNOWN_TIMEOUT_S: Final = 5.0
_GRACE_S: Final = 2.0
"""When the server stops: how long a stream has to end cleanly before it is cut."""
_SEND_TIMEOUT_S: Final = 30.0
"""A send blocked this long (the client reads nothing) ends the stream."""

_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "Server-Sent Events: `id: <message id>`, `data: <one ?json message>`, per new event",
        "content": {"text/event-stream": {}},
    },
    400: {"description": "malformed channel or user name, or a channel that is not logged"},
    503: {"description": "Kafka not reachable, or too many live subscribers"},
}


def login(value: str) -> str | None:
    """The login in ``value`` (``#`` and case dropped), None when it cannot be one."""
    name = login_of(value)
    return name if _NAME.fullmatch(name) else None


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[: _SHOWN - 3] + "...")


async def events(hub: LiveHub, sub: Subscriber, stopping: anyio.Event) -> AsyncIterator[ServerSentEvent]:
    """The subscriber's events as SSE, until it is ended (then ``event: dropped`` if it was dropped) or
    the server stops (``stopping``, set by sse-starlette: the stream then ends cleanly, not cut)."""

    async def stop() -> None:
        await stopping.wait()
        hub.fanout.end(sub, "the server is stopping")

    watcher = asyncio.create_task(stop())
    try:
        while True:
            item = await sub.queue.get()
            if item is None:
                if sub.dropped:
                    message = encode_json({"message": sub.ended or "dropped"}).decode()
                    yield ServerSentEvent(message, event="dropped")
                return
            yield ServerSentEvent(item.data, id=item.message_id.replace("\0", ""))
    finally:
        watcher.cancel()
        hub.unsubscribe(sub)


async def _unknown(request: Request, channel: str) -> bool:
    """True when the app's log store says ``channel`` is not logged. Without a store, or when it does not
    answer, the channel is taken as it is (live events do not need Cassandra)."""
    store = getattr(request.app.state, "store", None)
    if store is None:
        return False
    try:
        return await asyncio.wait_for(store.latest_day(channel), _KNOWN_TIMEOUT_S) is None
    except OptedOut:  # a 403, as every route answers for it
        raise
    except Exception as exc:
        log.warning("live: could not tell whether #%s is logged: %s", channel, type(exc).__name__)
        return False


def live_router(settings: LiveSettings | None = None) -> APIRouter:
    """The live route; ``settings`` default to the environment's (read when the app starts)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            hub: LiveHub | str = LiveHub(settings if settings is not None else load(LiveSettings))
        except ChatlogError as exc:  # a wrong setting: the route says it, the API still runs
            hub = one_line(exc, None)
            log.warning("live events are off: %s", hub)
        app.state.live_hub = hub
        try:
            yield
        finally:
            if isinstance(hub, LiveHub):
                await hub.close()

    router = APIRouter(lifespan=lifespan)

    @router.get(
        PATH,
        summary="A channel's new events as Server-Sent Events (optionally one user's)",
        response_class=Response,
        responses=_RESPONSES,
    )
    async def live(
        request: Request,
        channel: str,
        user: str | None = Query(None, description="Only this user's lines (a login)."),
    ) -> Response:
        name = login(channel)
        if name is None:
            return error_response(400, f"invalid channel name: {_shown(channel)}")
        who = None
        if user is not None:
            who = login(user)
            if who is None:
                return error_response(400, f"invalid user name: {_shown(user)}")
        hub = getattr(request.app.state, "live_hub", None)
        if not isinstance(hub, LiveHub):
            return error_response(503, f"live events are off: {hub or 'the app has not started'}")
        if await _unknown(request, name):
            return error_response(400, f"channel {name!r} is not logged")
        registry = getattr(request.app.state, "optout_registry", None)
        if registry is not None:
            if who is not None:
                await request.app.state.store.check_user(who)  # OptedOut: a 403
            if hub.hidden is None:  # once per hub: the logins it learns serve every subscriber
                seen = SeenLogins()
                hub.hidden = lambda event: hidden(event, registry, seen)
        try:
            sub = await hub.subscribe(name, who)
        except LiveUnavailable as exc:
            return error_response(503, f"live events unavailable: {exc}")

        async def release() -> None:  # also when the stream never starts (HEAD); on the loop, not a thread
            hub.unsubscribe(sub)

        stopping = anyio.Event()
        return EventSourceResponse(
            events(hub, sub, stopping),
            shutdown_event=stopping,
            shutdown_grace_period=_GRACE_S,
            ping=hub.settings.serve_live_ping_s,
            sep="\n",
            send_timeout=_SEND_TIMEOUT_S,
            background=BackgroundTask(release),
        )

    return router


router: Final = live_router()
"""The route on the environment's settings: ``app.include_router(live.router)``."""
