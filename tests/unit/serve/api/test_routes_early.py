"""The user-month route's early copy (serve.api.routes.add_user_month_early) answers exactly the paths its
documented copy would: no route between the two can match a path of its shape."""

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
from serve.api.app import create_app
from serve.api.routes import USER_MONTH
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


def test_no_route_between_the_early_and_the_documented_user_month_route_matches_its_paths() -> None:
    app = create_app(load(ServeSettings), MemoryStore())
    routes = list(_flat(app.routes))
    at = [i for i, route in enumerate(routes) if getattr(route, "path", None) == USER_MONTH]
    assert len(at) == 2, "the early copy and the documented one"
    early, documented = at
    assert not routes[early].include_in_schema and routes[documented].include_in_schema
    assert not any(isinstance(route, Mount) for route in routes[early:]), "a mount matches any length"
    for route in routes[early + 1 : documented]:
        assert ":path}" not in route.path, route.path
        assert _segments(route.path) != _segments(USER_MONTH), route.path


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
    ],
)
def test_a_user_month_path_is_answered_as_before(method: str, path: str, status: int) -> None:
    app = create_app(load(ServeSettings), MemoryStore(EVENTS), consent=ConsentSettings(serve_consent=False))

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, path)

    response = asyncio.run(go())
    assert response.status_code == status
    if path.startswith("/static/"):  # not the log routes' "no such route (expected /channel/...)"
        assert response.json() == {"status": 404, "message": "no such route"}
    if status == 405:  # the documented route's (a plain Starlette route would allow HEAD too)
        assert response.headers["allow"] == "GET"
    if status == 200 and method == "GET":
        assert response.text.startswith("[2024-01-02 00:00:00] #alpha bob: line 0\n")


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
