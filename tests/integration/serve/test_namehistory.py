"""``GET /namehistory/{user_id}`` over a real socket, on the name history store.write stored in a
fresh keyspace from real Twitch lines: a user renamed midway is one id with both logins, each with its
first and last sighting, in rustlog's shape; an unknown id is a 404, a malformed one a 400."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from core.settings import StackSettings
from schemas.chat_event import ChatEvent
from tests.integration.serve.events import privmsg
from tests.integration.serve.server import Server, serving

pytestmark = pytest.mark.integration

HOUR = 3_600_000
T0 = int(datetime(2024, 3, 4, 10, tzinfo=UTC).timestamp() * 1000)


def _say(n: int, at: int, login: str, user_id: str, channel: str = "alpha") -> ChatEvent:
    room = "1001" if channel == "alpha" else "1002"
    message_id = f"00000000-0000-4000-8000-{n:012d}"
    return privmsg(channel, at, login, f"message {n}", user_id=user_id, room_id=room, message_id=message_id)


def _story() -> list[ChatEvent]:
    """User 4242 is `oldname` for two days, then `newname` (in two channels); user 777 never renames."""
    return [
        _say(1, T0 + 250, "oldname", "4242"),
        _say(2, T0 + 26 * HOUR, "oldname", "4242", "beta"),
        _say(3, T0 + 49 * HOUR + 1_500, "oldname", "4242"),
        _say(4, T0 + 72 * HOUR, "newname", "4242"),
        _say(5, T0 + 96 * HOUR + 30_000, "newname", "4242", "beta"),
        _say(6, T0 + 5 * HOUR, "steady", "777"),
    ]


@pytest.fixture(scope="module")
def server(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(stack, tmp_path_factory, _story()) as running:
        yield running


def test_a_renamed_user_has_both_logins_with_first_and_last_seen(server: Server) -> None:
    response = server.get("/namehistory/4242", headers={"Origin": "https://logs.example"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.json() == [  # each sighting in its own hour: the sink keeps all of them exactly
        {
            "user_login": "newname",
            "last_timestamp": "2024-03-08T10:00:30Z",
            "first_timestamp": "2024-03-07T10:00:00Z",
        },
        {
            "user_login": "oldname",
            "last_timestamp": "2024-03-06T11:00:01.500Z",
            "first_timestamp": "2024-03-04T10:00:00.250Z",
        },
    ]
    assert server.get("/namehistory/777").json() == [
        {
            "user_login": "steady",
            "last_timestamp": "2024-03-04T15:00:00Z",
            "first_timestamp": "2024-03-04T15:00:00Z",
        }
    ]


def test_unknown_and_malformed_ids(server: Server) -> None:
    unknown = server.get("/namehistory/999")
    assert unknown.status_code == 404
    assert unknown.json() == {"status": 404, "message": "no name history for the user id '999'"}
    for bad in ("abc", "42x", "-42"):
        response = server.get(f"/namehistory/{bad}")
        assert response.status_code == 400, (bad, response.text)
        assert "invalid user id" in response.json()["message"]
    assert server.get("/namehistory/4242/").status_code == 200  # a trailing slash is ignored, as in rustlog


def test_the_route_is_in_the_openapi_document_and_the_capabilities(server: Server) -> None:
    assert "/namehistory/{user_id}" in server.get("/openapi.json").json()["paths"]
    assert "namehistory" in server.get("/capabilities").json()
