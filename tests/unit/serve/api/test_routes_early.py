"""The early copies of the user-month and channel-day routes (serve.api.routes.add_early_routes) answer
exactly the paths their documented copies would: no route between the two can match a path they take."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.routing import Mount

from consent.settings import ConsentSettings
from core.settings import load
from schemas.chat_event import ChatEvent
from serve.api import app as app_module
from serve.api.app import create_app
from serve.api.named import CHANNEL_KINDS
from serve.api.routes import CHANNEL_DAY, USER_MONTH
from serve.settings import ServeSettings
from serve.testing import MemoryStore

DAY = 1_704_153_600_000  # 2024-01-02
EVENTS = [
    ChatEvent(
        message_id=f"m{i}",
        kind="PRIVMSG",
        channel="alpha",
        channel_id="1",
        user_login="bob",
        text=f"line {i}",
        sent_at=DAY + i * 1000,
        received_at=DAY + i * 1000,
        raw=f"raw {i}",
    )
    for i in range(3)
]


def _flat(routes: list[Any]) -> Iterator[Any]:
    """The app's routes in the order they are tried, those of included routers in their place."""
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's included router
        if included is not None:
            yield from _flat(included.routes)
        else:
            yield route


def _segments(path: str) -> int:
    return path.count("/")


def _may_take(route: Any, template: str) -> bool:
    """Whether ``route`` may match a path the early copy of ``template`` takes: a GET under /channel/ or
    /channelid/ of its segments (the day's: its last segment digits)."""
    first = route.path.split("/")[1] if route.path != "/" else ""
    if "{" not in first and first not in CHANNEL_KINDS:
        return False  # a literal first segment other than channel, channelid (a mount's /static, /docs)
    if isinstance(route, Mount) or ":path}" in route.path or _segments(route.path) != _segments(template):
        return isinstance(route, Mount) or ":path}" in route.path
    last = route.path.rpartition("/")[2]
    return template != CHANNEL_DAY or "{" in last or last.isdigit()


@pytest.mark.parametrize("template", [USER_MONTH, CHANNEL_DAY])
def test_no_route_before_a_documented_route_matches_what_its_early_copy_takes(template: str) -> None:
    app = create_app(load(ServeSettings), MemoryStore())
    routes = list(_flat(app.routes))
    at = [i for i, route in enumerate(routes) if getattr(route, "path", None) == template]
    assert len(at) == 2, "the early copy and the documented one"
    early, documented = at
    assert early < 2, "the early copies come first"
    assert not routes[early].include_in_schema and routes[documented].include_in_schema
    assert [route.path for route in routes[early + 1 : documented] if _may_take(route, template)] == []


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/channel/alpha/user/bob/2024/1", 200),
        ("GET", "/channelid/1/user/bob/2024/1/", 200),
        ("HEAD", "/channel/alpha/user/bob/2024/1", 200),
        ("POST", "/channel/alpha/user/bob/2024/1", 405),
        ("GET", "/channel/alpha/user/bob/2024/13", 400),
        ("GET", "/foo/alpha/user/bob/2024/1", 404),
        ("GET", "/static/a/b/c/d/e", 404),  # the page's assets: a mount before the early route
        ("GET", "/channel/alpha/2024/1/2", 200),
        ("GET", "/channelid/1/2024/01/02/", 200),
        ("HEAD", "/channel/alpha/2024/1/2", 200),
        ("POST", "/channel/alpha/2024/1/2", 405),
        ("GET", "/channel/alpha/2024/1/32", 400),
        ("GET", "/channel/alpha/2024/1/2x", 400),  # not digits: the documented route, its 400
        ("GET", "/channel/alpha/user/bob/random", 200),  # five segments, the last a word: not a day
        ("GET", "/channel/alpha/user/bob/2", 404),  # the day route's "no such route"
        ("GET", "/static/a/b/c/1", 404),
        ("GET", "/docs/assets/a/b/c/d", 404),
        ("GET", "/channelid/1/userid/bob/2024/1", 404),
        ("GET", "/channel/alpha/user/bob/stats", 200),
        ("GET", "/channel/alpha/user/bob/search?q=line", 200),
    ],
)
def test_a_path_is_answered_as_without_the_early_routes(
    monkeypatch: pytest.MonkeyPatch, method: str, path: str, status: int
) -> None:
    def answer() -> tuple[int, list[tuple[str, str]], bytes]:
        app = create_app(
            load(ServeSettings), MemoryStore(EVENTS), consent=ConsentSettings(serve_consent=False)
        )

        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                await client.request(method, path)
                return await client.get("/metrics")  # the first request's route template and status

        metrics = asyncio.run(go())
        counted = [
            line for line in metrics.text.splitlines() if line.startswith("chatlog_serve_requests_total")
        ]
        assert len(counted) == 1, counted
        response = asyncio.run(_request(app, method, path))
        return response.status_code, sorted(response.headers.items()), response.content + counted[0].encode()

    with_them = answer()
    monkeypatch.setattr(app_module, "add_early_routes", lambda app: None)
    assert answer() == with_them
    assert with_them[0] == status


async def _request(app: Any, method: str, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.request(method, path)


def test_a_user_month_request_is_counted_under_the_route_template() -> None:
    app = create_app(load(ServeSettings), MemoryStore(EVENTS), consent=ConsentSettings(serve_consent=False))

    async def go() -> str:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            await client.get("/channel/alpha/user/bob/2024/1")
            await client.post("/channel/alpha/user/bob/2024/1")
            return (await client.get("/metrics")).text

    counted = [
        line for line in asyncio.run(go()).splitlines() if line.startswith("chatlog_serve_requests_total")
    ]
    assert f'chatlog_serve_requests_total{{route="{USER_MONTH}",status="200"}} 1.0' in counted
    assert f'chatlog_serve_requests_total{{route="{USER_MONTH}",status="405"}} 1.0' in counted
