"""``/api/v2/recent-messages/{login}`` over a real socket (recent-messages2's shape and marking), on events
store.write stored in a fresh keyspace."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from core.irc_parse import parse_line
from core.settings import StackSettings
from schemas.chat_event import ChatEvent
from serve.api.recent import NOT_JOINED
from tests.integration.serve.server import Server, serving

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)
T0 = NOW - 600_000


def _event(channel: str, at: int, kind: str, user: str | None, text: str, tags: dict[str, str]) -> ChatEvent:
    """The ingester's event of a line with ``tags`` (and the time it was sent), received 7 ms later."""
    head = ";".join(f"{k}={v}" for k, v in {**tags, "tmi-sent-ts": str(at)}.items())
    prefix = f"{user}!{user}@{user}.tmi.twitch.tv" if user and kind != "CLEARMSG" else "tmi.twitch.tv"
    event = parse_line(f"@{head} :{prefix} {kind} #{channel} :{text}", received_at=at + 7, ingester="r1")
    assert event is not None
    return event


def _events() -> list[ChatEvent]:
    return [
        _event("gamma", NOW - 2 * 86_400_000, "PRIVMSG", "dave", "old", {"id": "old", "user-id": "44"}),
        _event("gamma", T0, "PRIVMSG", "bob", "hello", {"id": "m1", "user-id": "42"}),
        _event("gamma", T0 + 1000, "PRIVMSG", "carol", "spam", {"id": "m2", "user-id": "43"}),
        _event("gamma", T0 + 2000, "PRIVMSG", "bob", "again", {"id": "m3", "user-id": "42"}),
        _event("gamma", T0 + 3000, "CLEARMSG", "carol", "spam", {"login": "carol", "target-msg-id": "m2"}),
        _event("gamma", T0 + 4000, "CLEARCHAT", None, "bob", {"ban-duration": "302", "target-user-id": "42"}),
        _event("gamma", T0 + 5000, "PRIVMSG", "bob", "back", {"id": "m6", "user-id": "42"}),
        _event("gamma", T0 + 6000, "NOTICE", None, "hosting", {"msg-id": "host_on"}),
        _event("delta", T0, "PRIVMSG", "erin", "hi", {"id": "d1", "user-id": "45"}),
        _event("delta", T0 + 1000, "NOTICE", None, "slow mode", {"msg-id": "slow_on"}),
        _event("delta", T0 + 2000, "CLEARCHAT", None, "", {}),
        _event("delta", T0 + 3000, "PRIVMSG", "erin", "after", {"id": "d4", "user-id": "45"}),
    ]


@pytest.fixture(scope="module")
def server(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(stack, tmp_path_factory, _events()) as running:
        yield running


def _recent(server: Server, query: str = "", channel: str = "gamma") -> list[str]:
    response = server.get(f"/api/v2/recent-messages/{channel}{query}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"messages", "error", "error_code"} and body["error"] is None
    lines: list[str] = body["messages"]
    return lines


def _tags(line: str) -> dict[str, str]:
    head = line[1:].partition(" ")[0]
    return dict(tag.partition("=")[::2] for tag in head.split(";"))


def _rest(line: str) -> str:
    return line.partition(" ")[2]


def test_lines_are_marked_historical_and_deleted(server: Server) -> None:
    lines = _recent(server)
    assert [_rest(line) for line in lines] == [
        ":bob!bob@bob.tmi.twitch.tv PRIVMSG #gamma :hello",
        ":carol!carol@carol.tmi.twitch.tv PRIVMSG #gamma :spam",
        ":bob!bob@bob.tmi.twitch.tv PRIVMSG #gamma :again",
        ":tmi.twitch.tv CLEARMSG #gamma :spam",
        ":tmi.twitch.tv CLEARCHAT #gamma :bob",
        ":bob!bob@bob.tmi.twitch.tv PRIVMSG #gamma :back",
    ]  # the old line is past the 24 h horizon; NOTICE host_on is not exported
    tags = [_tags(line) for line in lines]
    assert all(t["historical"] == "1" for t in tags)
    assert [t["rm-received-ts"] for t in tags] == [str(T0 + d * 1000 + 7) for d in (0, 1, 2, 3, 4, 5)]
    assert [t.get("rm-deleted") for t in tags] == ["1", "1", "1", None, None, None]
    assert tags[1]["id"] == "m2" and tags[1]["user-id"] == "43"  # the line's own tags are kept


def test_hide_options_and_clearchat_to_notice(server: Server) -> None:
    moderated = _recent(server, "?hide_moderated_messages=true")
    assert [_tags(line).get("id") for line in moderated] == [None, None, "m6"]
    moderation = _recent(server, "?hide_moderation_messages=true")
    assert [_tags(line)["id"] for line in moderation] == ["m1", "m2", "m3", "m6"]
    camel = _recent(server, "?hideModerationMessages=1")
    assert camel == moderation
    notice = _recent(server, "?clearchat_to_notice=true")[4]
    assert _rest(notice) == ":tmi.twitch.tv NOTICE #gamma :bob has been timed out for 5m 2s."
    assert _tags(notice)["msg-id"] == "rm-timeout" and _tags(notice)["historical"] == "1"
    cleared = _recent(server, "?clearchat_to_notice=true", channel="delta")
    assert [_tags(line).get("rm-deleted") for line in cleared] == ["1", "1", None, None]
    assert _rest(cleared[2]) == ":tmi.twitch.tv NOTICE #delta :Chat has been cleared by a moderator."
    assert _tags(cleared[2])["msg-id"] == "rm-clearchat"


def test_limit_before_after(server: Server) -> None:
    assert [_tags(line).get("id") for line in _recent(server, "?limit=2")] == [None, "m6"]
    assert _recent(server, "?limit=0") == []
    assert len(_recent(server, "?limit=100000")) == 6
    before = _recent(server, f"?before={T0 + 2500}")
    assert [_tags(line)["id"] for line in before] == ["m1", "m2", "m3"]
    assert all("rm-deleted" not in _tags(line) for line in before)  # the CLEARMSG is outside the window
    everything = _recent(server, "?after=0")
    assert _tags(everything[0])["id"] == "old" and len(everything) == 7
    assert [_tags(line).get("id") for line in _recent(server, f"?after={T0 + 4000}")] == ["m6"]


def test_unknown_channel_and_bad_requests(server: Server) -> None:
    response = server.get("/api/v2/recent-messages/nochan")
    assert response.status_code == 200
    assert response.json() == {"messages": [], "error": NOT_JOINED, "error_code": "channel_not_joined"}
    upper = server.get("/api/v2/recent-messages/Gamma")
    assert upper.status_code == 302 and upper.headers["location"] == "/api/v2/recent-messages/gamma"
    cases = {
        "?limit=abc": ("invalid_query", "limit"),
        "?limit=-1": ("invalid_query", "limit"),
        "?before=yesterday": ("invalid_query", "before"),
        "?after=1.5": ("invalid_query", "after"),
        "?hide_moderated_messages=maybe": ("invalid_query", "hide_moderated_messages"),
    }
    for query, (code, word) in cases.items():
        bad = server.get(f"/api/v2/recent-messages/gamma{query}")
        assert bad.status_code == 400, (query, bad.text)
        body = bad.json()
        assert (
            body["error_code"] == code and word in body["error"] and body["status_message"] == "Bad Request"
        )
    login = server.get("/api/v2/recent-messages/a%20b")
    assert login.status_code == 400 and login.json()["error_code"] == "invalid_channel_login"
    assert server.get("/api/v2/recent-messages/x" + "y" * 300).json()["error_code"] == "invalid_channel_login"
