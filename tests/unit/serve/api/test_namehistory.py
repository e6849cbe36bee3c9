"""``GET /namehistory/{user_id}``: rustlog's body (fixture written from rustlog's source), its errors in
this API's style, its OpenAPI entry, and the read over a store's Cassandra session."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from core.settings import load
from core.testing_cassandra import Call, FakeSession
from serve.api.app import create_app
from serve.api.namehistory import previous_names, rfc3339
from serve.names import NameSeen
from serve.settings import ServeSettings
from tests.unit.serve.api.test_app import FakeStore

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "namehistory_rustlog.json").read_text())
ROWS = [NameSeen(**row) for row in FIXTURE["rows"]]


class NamesStore(FakeStore):
    """The in-memory store with a name history for the fixture's user id."""

    def __init__(self, *, broken: bool = False) -> None:
        super().__init__()
        self.broken = broken
        self.asked: list[str] = []

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        self.asked.append(user_id)
        if self.broken:
            raise RuntimeError("Cassandra timed out")
        return ROWS if user_id == FIXTURE["user_id"] else []


def _naive(ms: int | None) -> datetime | None:
    """A timestamp as the driver gives it: a naive UTC datetime."""
    return None if ms is None else datetime(1970, 1, 1) + timedelta(milliseconds=ms)


def _rows(call: Call) -> list[SimpleNamespace]:
    """The fixture's name history as the driver reads it, for the fixture's user id."""
    if call.params[0] != FIXTURE["user_id"]:
        return []
    return [
        SimpleNamespace(
            user_login=r.login,
            display_name=r.display_name or "",
            first_seen=_naive(r.first_seen_ms),
            last_seen=_naive(r.last_seen_ms),
        )
        for r in ROWS
    ]


class SessionStore(FakeStore):
    """A store without its own name reader: the route reads over its ``session``, as on CassandraStore."""

    def __init__(self) -> None:
        super().__init__()
        self.session = FakeSession(_rows)


def _get(store: FakeStore, *paths: str, headers: dict[str, str] | None = None) -> list[httpx.Response]:
    async def go() -> list[httpx.Response]:
        app = create_app(load(ServeSettings), store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.get(path, headers=headers) for path in paths]

    return asyncio.run(go())


def test_the_body_is_rustlogs_previous_names() -> None:
    body = previous_names(ROWS)
    assert body == FIXTURE["body"]
    assert all(list(entry) == ["user_login", "last_timestamp", "first_timestamp"] for entry in body)


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1, "1970-01-01T00:00:00.001Z"),
        (1_704_164_645_000, "2024-01-02T03:04:05Z"),
        (1_704_164_645_250, "2024-01-02T03:04:05.250Z"),
        (1_704_164_645_999, "2024-01-02T03:04:05.999Z"),
        (None, None),
    ],
)
def test_times_are_written_as_chrono_serialises_them(ms: int | None, text: str | None) -> None:
    assert rfc3339(ms) == text


def test_a_login_whose_first_sighting_expired_has_a_null_first_timestamp() -> None:
    rows = [NameSeen("alice", "Alice", None, 1_704_164_645_000), NameSeen("alice", None, 1_000, 2_000)]
    assert previous_names(rows) == [
        {"user_login": "alice", "last_timestamp": "2024-01-02T03:04:05Z", "first_timestamp": None}
    ]


def test_a_known_id_answers_rustlogs_json_with_cors() -> None:
    store = NamesStore()
    (response,) = _get(store, f"/namehistory/{FIXTURE['user_id']}", headers={"Origin": "https://x.example"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["cache-control"] == "no-cache"
    assert response.json() == FIXTURE["body"]
    assert store.asked == [FIXTURE["user_id"]]


def test_an_unknown_id_is_a_json_404_and_a_malformed_one_a_400() -> None:
    store = NamesStore()
    unknown, *bad = _get(
        store, "/namehistory/999", "/namehistory/abc", "/namehistory/12a", "/namehistory/-1",
        "/namehistory/" + "1" * 21, "/namehistory/%EF%BC%91%EF%BC%92",  # fullwidth digits
    )  # fmt: skip
    assert unknown.status_code == 404
    assert unknown.json() == {"status": 404, "message": "no name history for the user id '999'"}
    for response in bad:
        assert response.status_code == 400, response.url
        assert response.json()["status"] == 400 and "invalid user id" in response.json()["message"]
    assert store.asked == ["999"]  # a malformed id is not looked up


def test_a_failing_storage_is_a_503_and_a_store_without_names_a_501() -> None:
    (failing,) = _get(NamesStore(broken=True), "/namehistory/42")
    assert failing.status_code == 503
    assert failing.json() == {"status": 503, "message": "the log storage did not answer; try again"}
    (none,) = _get(FakeStore(), "/namehistory/42")
    assert none.status_code == 501 and none.json()["message"] == "this log storage keeps no name history"


def test_the_route_is_documented_and_listed_as_a_capability() -> None:
    spec, capabilities = _get(NamesStore(), "/openapi.json", "/capabilities")
    operation = spec.json()["paths"]["/namehistory/{user_id}"]["get"]
    assert {"200", "400", "404", "503"} <= set(operation["responses"])
    schema = spec.json()["components"]["schemas"]["PreviousName"]
    assert list(schema["properties"]) == ["user_login", "last_timestamp", "first_timestamp"]
    assert "namehistory" in capabilities.json()
    assert "namehistory" in capabilities.headers["x-rustlog-capabilities"].split(",")


def test_a_store_with_a_cassandra_session_is_read_over_it_with_one_prepare() -> None:
    store = SessionStore()
    found, unknown, again = _get(
        store, f"/namehistory/{FIXTURE['user_id']}", "/namehistory/7", f"/namehistory/{FIXTURE['user_id']}"
    )
    assert found.json() == FIXTURE["body"] == again.json()
    assert unknown.status_code == 404
    assert store.session.prepared == [
        "SELECT user_login, display_name, first_seen, last_seen FROM user_names WHERE user_id = ?"
    ]
    assert [call.params for call in store.session.executed] == [
        (FIXTURE["user_id"],),
        ("7",),
        (FIXTURE["user_id"],),
    ]
