"""A user's month by id is read without looking the id's login up; the lookup says which 404 it is."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from core.settings import load
from schemas.chat_event import ChatEvent
from serve.api.app import create_app
from serve.settings import ServeSettings
from serve.testing import MemoryStore

DAY = 1_704_153_600_000  # 2024-01-02


def _line(i: int) -> ChatEvent:
    return ChatEvent(
        message_id=f"m{i}", kind="PRIVMSG", channel="alpha", channel_id="1", user_login="bob", user_id="7",
        text=f"line {i}", sent_at=DAY + i * 1000, received_at=DAY + i * 1000, raw=f"raw {i}",
    )  # fmt: skip


def _store() -> MemoryStore:
    return MemoryStore([_line(i) for i in range(3)])


def _get(store: MemoryStore, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(load(ServeSettings), store))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path)

    return asyncio.run(go())


def test_a_month_by_id_is_read_without_a_lookup_of_the_login() -> None:
    store = _store()
    response = _get(store, "/channel/alpha/userid/7/2024/1")
    assert response.status_code == 200
    assert response.text.splitlines()[0] == "[2024-01-02 00:00:00] #alpha bob: line 0"
    assert "user_by_id" not in store.calls


def test_an_empty_month_of_a_known_id_names_the_user_by_login() -> None:
    store = _store()
    response = _get(store, "/channel/alpha/userid/7/2024/2")
    body: dict[str, Any] = response.json()
    assert response.status_code == 404
    assert body["message"] == "nothing stored for bob in #alpha in that time range"
    assert "user_by_id" in store.calls


def test_an_unknown_id_is_the_404_that_says_so() -> None:
    response = _get(_store(), "/channel/alpha/userid/8/2024/1")
    body: dict[str, Any] = response.json()
    assert response.status_code == 404
    assert body["message"] == "no user with the id '8' in #alpha"


def test_a_month_by_login_still_resolves_as_before() -> None:
    store = _store()
    assert _get(store, "/channel/alpha/user/bob/2024/1").status_code == 200
    assert _get(store, "/channel/alpha/user/nobody/2024/1").json()["message"] == (
        "nothing stored for nobody in #alpha in that time range"
    )
