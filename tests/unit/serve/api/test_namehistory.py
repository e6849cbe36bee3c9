"""``GET /namehistory/{user_id}``: rustlog's body (fixture written from rustlog's source), its errors in
this API's style, its OpenAPI entry (the read over Cassandra: tests/unit/serve/store/test_names.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from core.settings import load
from serve.api.app import create_app
from serve.api.namehistory import previous_names, rfc3339
from serve.settings import ServeSettings
from serve.testing import MemoryStore
from store.names import NameSeen

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "namehistory_rustlog.json").read_text())
ROWS = [NameSeen(**row) for row in FIXTURE["rows"]]


def names_store(*, broken: bool = False) -> MemoryStore:
    """The in-memory store with a name history for the fixture's user id."""
    fail: dict[str, BaseException] = (
        {"user_name_history": RuntimeError("Cassandra timed out")} if broken else {}
    )
    return MemoryStore(names={FIXTURE["user_id"]: ROWS}, fail=fail)


def _asked(store: MemoryStore) -> int:
    return store.calls.count("user_name_history")


def _get(store: MemoryStore, *paths: str, headers: dict[str, str] | None = None) -> list[httpx.Response]:
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
    store = names_store()
    (response,) = _get(store, f"/namehistory/{FIXTURE['user_id']}", headers={"Origin": "https://x.example"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["cache-control"] == "no-cache"
    assert response.json() == FIXTURE["body"]
    assert _asked(store) == 1


def test_an_unknown_id_is_a_json_404_and_a_malformed_one_a_400() -> None:
    store = names_store()
    unknown, *bad = _get(
        store, "/namehistory/999", "/namehistory/abc", "/namehistory/12a", "/namehistory/-1",
        "/namehistory/" + "1" * 21, "/namehistory/%EF%BC%91%EF%BC%92",  # fullwidth digits
    )  # fmt: skip
    assert unknown.status_code == 404
    assert unknown.json() == {"status": 404, "message": "no name history for the user id '999'"}
    for response in bad:
        assert response.status_code == 400, response.url
        assert response.json()["status"] == 400 and "invalid user id" in response.json()["message"]
    assert _asked(store) == 1  # a malformed id is not looked up


def test_a_failing_storage_is_a_503() -> None:
    (failing,) = _get(names_store(broken=True), "/namehistory/42")
    assert failing.status_code == 503
    assert failing.json() == {"status": 503, "message": "the log storage did not answer; try again"}


def test_the_route_is_documented_and_listed_as_a_capability() -> None:
    spec, capabilities = _get(names_store(), "/openapi.json", "/capabilities")
    operation = spec.json()["paths"]["/namehistory/{user_id}"]["get"]
    assert {"200", "400", "404", "503"} <= set(operation["responses"])
    schema = spec.json()["components"]["schemas"]["PreviousName"]
    assert list(schema["properties"]) == ["user_login", "last_timestamp", "first_timestamp"]
    assert "namehistory" in capabilities.json()
    assert "namehistory" in capabilities.headers["x-rustlog-capabilities"].split(",")
