"""`chatlog serve` over a real socket: every route and format of the justlog/rustlog API, on events
store.write stored in a fresh keyspace."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from core.settings import StackSettings
from schemas.chat_event import ChatEvent
from tests.integration.serve.events import line_event, privmsg
from tests.integration.serve.server import Server, serving

pytestmark = pytest.mark.integration

JAN2 = int(datetime(2024, 1, 2, tzinfo=UTC).timestamp() * 1000)
FEB3 = int(datetime(2024, 2, 3, tzinfo=UTC).timestamp() * 1000)
BIG_DAY = int(datetime(2023, 12, 30, tzinfo=UTC).timestamp() * 1000)
BIG = 3000


USER_IDS = {"bob": "42", "carol": "43"}


def _event(
    channel: str, at: int, user: str | None, text: str, *, kind: str = "PRIVMSG", **kw: Any
) -> ChatEvent:
    room = "1001" if channel == "alpha" else "1002"
    if kind == "CLEARCHAT":  # a timeout of `text`
        return line_event(kind, channel, at, text=text, room_id=room, user_id=USER_IDS.get(text), **kw)
    if kind == "USERNOTICE":  # sent by the server, the user in its tags
        extra = {"display-name": (user or "").capitalize(), "login": user or "", **kw.pop("extra", {})}
        if user in USER_IDS:
            extra["user-id"] = USER_IDS[user]
        return line_event(kind, channel, at, text=text, room_id=room, extra=extra, **kw)
    message_id = kw.pop("message_id", str(uuid.uuid4()))
    if kw.pop("is_action", False):
        text = f"\x01ACTION {text}\x01"
    return privmsg(
        channel, at, user, text, user_id=USER_IDS.get(user or ""), room_id=room, message_id=message_id, **kw
    )


def _events() -> list[ChatEvent]:
    jan = [
        _event("alpha", JAN2 + 1_000, "bob", "hello there"),
        _event("alpha", JAN2 + 61_500, "carol", "hi bob"),
        _event("alpha", JAN2 + 3_600_000, None, "bob", kind="CLEARCHAT", extra={"ban-duration": "600"}),
        _event(
            "alpha",
            JAN2 + 7_200_000,
            "carol",
            "great stream",
            kind="USERNOTICE",
            message_id="sub-1",
            extra={"system-msg": "carol subscribed at Tier 1."},
        ),
        _event("alpha", JAN2 + 86_399_000, "bob", "dances", is_action=True),
    ]
    feb = [_event("alpha", FEB3 + 5_000, "bob", "february"), _event("beta", FEB3, "dave", "beta line")]
    big = [_event("alpha", BIG_DAY + i * 28_000, f"u{i % 50}", f"line {i}") for i in range(BIG)]
    deleted = line_event(  # dave's line deleted a second later: never a random pick, never dave "saying" it
        "CLEARMSG", "beta", FEB3 + 1_000, login="dave", text="beta line", room_id="1002"
    )
    return jan + feb + big + [deleted]


@pytest.fixture(scope="module")
def server(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(stack, tmp_path_factory, _events()) as running:
        yield running


def test_channels_and_list(server: Server) -> None:
    assert server.get("/channels").json() == {
        "channels": [{"name": "alpha", "userID": "1001"}, {"name": "beta", "userID": "1002"}]
    }
    days = [{"year": "2024", "month": "2", "day": "3"}, {"year": "2024", "month": "1", "day": "2"}]
    days.append({"year": "2023", "month": "12", "day": "30"})
    assert server.get("/list?channel=alpha").json() == {"availableLogs": days}
    assert server.get("/list?channelid=1001").json() == {"availableLogs": days}
    months = [{"year": "2024", "month": "2"}, {"year": "2024", "month": "1"}]
    assert server.get("/list?channel=alpha&user=bob").json() == {"availableLogs": months}
    assert server.get("/list?channel=alpha&user=carol").json() == {"availableLogs": months[1:]}
    nobody = server.get("/list?channel=alpha&user=nobody")
    assert nobody.status_code == 404 and "nobody" in nobody.json()["message"]
    missing = server.get("/list")
    assert missing.status_code == 400 and "channel" in missing.json()["message"]
    assert server.get("/list?channel=alpha&userid=42").json() == {"availableLogs": months}
    assert server.get("/list?channelid=1001&userid=43").json() == {"availableLogs": months[1:]}
    unknown = server.get("/list?channel=alpha&userid=999")
    assert unknown.status_code == 404 and "999" in unknown.json()["message"]


def test_day_text_is_justlogs_format(server: Server) -> None:
    response = server.get("/channel/alpha/2024/1/2")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["cache-control"] == "public, max-age=300"  # an erasure shows within 5 minutes
    assert response.text.splitlines() == [
        "[2024-01-02 00:00:01] #alpha bob: hello there",
        "[2024-01-02 00:01:01] #alpha carol: hi bob",
        "[2024-01-02 01:00:00] #alpha bob has been timed out for 600 seconds",
        "[2024-01-02 02:00:00] #alpha carol: carol subscribed at Tier 1. great stream",
        "[2024-01-02 23:59:59] #alpha bob: dances",
    ]
    assert server.get("/channelid/1001/2024/01/02").text == response.text
    assert server.get("/channel/alpha/2024/1/2/").text == response.text  # a trailing slash is ignored


def test_day_json_formats(server: Server) -> None:
    body = server.get("/channel/alpha/2024/1/2?json").json()
    messages = body["messages"]
    assert len(messages) == 5 and set(body) == {"messages"}
    first = messages[0]
    assert set(first) == {
        "text", "displayName", "timestamp", "id", "tags", "username", "channel", "raw", "type", "systemText",
    }  # fmt: skip
    assert first["timestamp"] == "2024-01-02T00:00:01Z" and first["type"] == 1
    assert (first["username"], first["displayName"], first["channel"]) == ("bob", "Bob", "alpha")
    assert messages[1]["timestamp"] == "2024-01-02T00:01:01.500Z"
    # justlog's chatMessage: a timeout names its target, its sentence in systemText only
    timeout = messages[2]
    assert (timeout["type"], timeout["username"], timeout["displayName"]) == (2, "bob", "bob")
    assert (timeout["text"], timeout["systemText"]) == ("", "bob has been timed out for 600 seconds")
    # a subscription: systemText then the user's words in text (what justlog's frontend prints)
    sub = messages[3]
    assert (sub["type"], sub["id"], sub["username"], sub["displayName"]) == (4, "sub-1", "carol", "Carol")
    assert (sub["systemText"], sub["text"]) == ("carol subscribed at Tier 1.", "great stream")
    basic = server.get("/channel/alpha/2024/1/2?jsonBasic").json()["messages"]
    assert all(set(m) == {"text", "displayName", "timestamp", "id", "tags"} for m in basic)
    # rustlog's BasicMessage: the user friendly text, a ban's target as displayName
    assert [m["text"] for m in basic] == [
        "hello there",
        "hi bob",
        "bob has been timed out for 600 seconds",
        "carol subscribed at Tier 1. great stream",
        "dances",
    ]
    assert (
        basic[2]["displayName"] == "bob" and basic[3]["tags"]["system-msg"] == "carol subscribed at Tier 1."
    )
    nd = server.get("/channel/alpha/2024/1/2?ndjson")
    assert nd.headers["content-type"].startswith("application/x-ndjson")
    full = [json.loads(line) for line in nd.text.splitlines()]  # rustlog's FullMessage plus systemText
    assert [m["text"] for m in full] == [m["text"] for m in basic]
    assert [m for i, m in enumerate(full) if i not in (2, 3)] == [
        m for i, m in enumerate(messages) if i not in (2, 3)
    ]
    raw = server.get("/channel/alpha/2024/1/2?raw").text.splitlines()
    assert raw == [e.raw for e in server.events[:5]]  # the lines as Twitch sent them


def test_reverse_limit_offset_and_ranges(server: Server) -> None:
    lines = server.get("/channel/alpha/2024/1/2").text.splitlines()
    assert server.get("/channel/alpha/2024/1/2?reverse").text.splitlines() == lines[::-1]
    assert server.get("/channel/alpha/2024/1/2?limit=2&offset=1").text.splitlines() == lines[1:3]
    assert server.get("/channel/alpha/2024/1/2?reverse&limit=1").text.splitlines() == lines[-1:]
    lo, hi = (JAN2 + 61_000) // 1000, (JAN2 + 3_600_000) // 1000
    ranged = server.get(f"/channel/alpha?from={lo}&to={hi}")
    assert ranged.status_code == 200 and ranged.text.splitlines() == lines[1:3]
    rfc = server.get("/channel/alpha?from=2024-01-02T00:01:00Z&to=2024-01-02T01:00:00%2B00:00")
    assert rfc.text.splitlines() == lines[1:3]
    narrowed = server.get("/channel/alpha/2024/1/2?from=2024-01-02T01:00:00Z")
    assert narrowed.text.splitlines() == lines[2:]


def test_redirects(server: Server) -> None:
    latest = server.get("/channel/alpha?json")
    assert latest.status_code == 302 and latest.headers["location"] == "/channel/alpha/2024/2/3?json"
    user = server.get("/channel/alpha/user/bob")
    assert user.status_code == 302 and user.headers["location"] == "/channel/alpha/user/bob/2024/2"
    assert server.get("/channel/alpha/user/carol").headers["location"] == "/channel/alpha/user/carol/2024/1"
    upper = server.get("/Channel/ALPHA/2024/1/2?JSON")
    assert upper.status_code == 302 and upper.headers["location"] == "/channel/alpha/2024/1/2?JSON"
    for path in ("//Evil.com", "/%2F/Evil.com", "//Evil.com/Channel/alpha"):  # a Location on this host only
        assert server.get(path).headers["location"] == "/evil.com" + path.split("Evil.com")[1].lower(), path
    hashed = server.get("/channel/%23alpha/user/%20bob%20")  # the redirect names what was found
    assert hashed.headers["location"] == "/channel/alpha/user/bob/2024/2"
    assert server.get("/channelid/1001").headers["location"] == "/channelid/1001/2024/2/3"
    followed = httpx.get(server.base + "/channel/Alpha/user/BOB", follow_redirects=True)
    assert followed.status_code == 200 and followed.url.path == "/channel/alpha/user/bob/2024/2"
    assert followed.text == "[2024-02-03 00:00:05] #alpha bob: february\n"


def test_user_month(server: Server) -> None:
    text = server.get("/channel/alpha/user/bob/2024/1").text.splitlines()
    assert text == [
        "[2024-01-02 00:00:01] #alpha bob: hello there",
        "[2024-01-02 01:00:00] #alpha bob has been timed out for 600 seconds",  # a timeout is in bob's log
        "[2024-01-02 23:59:59] #alpha bob: dances",
    ]
    assert server.get("/channel/alpha/userid/42/2024/1").text.splitlines() == text
    assert server.get("/channelid/1001/userid/42/2024/1").text.splitlines() == text
    carol = server.get("/channelid/1001/user/carol/2024/1?json").json()["messages"]
    assert [m["text"] for m in carol] == ["hi bob", "great stream"]  # justlog's: the sub's words only
    assert server.get("/channel/alpha/user/bob/2024/1?reverse").text.splitlines() == text[::-1]


def test_not_found_and_bad_requests(server: Server) -> None:
    cases = {
        "/channel/nochan/2024/1/2": (404, "nochan"),
        "/channelid/999/2024/1/2": (404, "999"),
        "/channel/alpha/2024/3/1": (404, "nothing stored"),
        "/channel/alpha/user/nobody/2024/1": (404, "nobody"),
        "/channel/alpha/userid/999/2024/1": (404, "999"),
        "/chanel/alpha/2024/1/2": (404, "no such route"),
        "/channel/alpha/2024/13/1": (400, "month"),
        "/channel/alpha/2024/2/30": (400, "day"),
        "/channel/alpha/x/1/1": (400, "year"),
        "/channel/alpha/2024/1/2?limit=abc": (400, "limit"),
        "/channel/alpha/2024/1/2?offset=-1": (400, "offset"),
        "/channel/alpha?from=yesterday": (400, "from"),
        "/channel/alpha?from=2024-01-03T00:00:00Z&to=2024-01-02T00:00:00Z": (400, "from"),
        "/list?channel=alpha&user=bob&x=%ff": (200, ""),
        "/channel/" + "a" * 60_000: (404, "longer than"),  # never looked up, nor kept in a cache
        "/channelid/" + "1" * 60_000 + "/2024/1/2": (404, "longer than"),
        "/channel/alpha/userid/" + "4" * 60_000: (404, "longer than"),
        "/channel/alpha/2024/1/2?to=2023-12-01T00:00:00Z": (400, "to is before the start"),
        "/channel/alpha/2024/1/2?from=2024-02-01T00:00:00Z": (400, "from is after the end"),
    }
    for path, (status, word) in cases.items():
        response = server.get(path)
        assert response.status_code == status, (path, response.text)
        if status != 200:
            assert response.headers["content-type"] == "application/json", path
            assert word in response.json()["message"], (path, response.json())


def test_large_day_streams_in_order(server: Server) -> None:
    with httpx.stream("GET", server.base + "/channel/alpha/2023/12/30?ndjson", timeout=60) as response:
        assert response.status_code == 200
        assert "content-length" not in response.headers  # streamed (chunked), not built in memory
        stamps = [json.loads(line)["timestamp"] for line in response.iter_lines() if line]
    assert len(stamps) == BIG
    assert stamps == sorted(stamps) and stamps[0] == "2023-12-30T00:00:00Z"


def test_cors_health_metrics_openapi_docs(server: Server) -> None:
    cors = server.get("/channel/alpha/2024/1/2", headers={"Origin": "https://logs.example"})
    assert cors.headers["access-control-allow-origin"] == "*"
    preflight = httpx.options(
        server.base + "/channels",
        headers={"Origin": "https://logs.example", "Access-Control-Request-Method": "GET"},
    )
    assert preflight.status_code == 200 and "GET" in preflight.headers["access-control-allow-methods"]
    assert server.get("/health").json() == {"status": "ok"}
    metrics = server.get("/metrics").text
    assert 'chatlog_serve_requests_total{route="/{ct}/{c}/{y}/{m}/{d}",status="200"}' in metrics
    assert "chatlog_serve_lines_total" in metrics
    spec = server.get("/openapi.json").json()
    assert {
        "/channels", "/list", "/{ct}/{c}", "/{ct}/{c}/{y}/{m}/{d}", "/{ct}/{c}/{ut}/{u}/{y}/{m}",
        "/api/v2/recent-messages/{login}", "/{ct}/{c}/random", "/{ct}/{c}/{ut}/{u}/random",
        "/{ct}/{c}/stats", "/{ct}/{c}/{ut}/{u}/stats", "/capabilities",
    } <= set(spec["paths"])  # fmt: skip
    docs = server.get("/docs")
    assert docs.status_code == 200 and "/docs/assets/swagger-ui-bundle.js" in docs.text
    assert "cdn" not in docs.text.lower()
    asset = server.get("/docs/assets/swagger-ui-bundle.js")
    assert asset.status_code == 200 and len(asset.content) > 100_000


def _refused(server: Server, cases: dict[str, tuple[int, str]]) -> None:
    """Each path of ``cases`` answers its status, and an error message with its word in it."""
    for path, (status, word) in cases.items():
        response = server.get(path)
        assert response.status_code == status and word in response.json()["message"], (path, response.text)


def test_random_lines(server: Server) -> None:
    beta = server.get("/channel/beta/random")
    assert beta.status_code == 200 and beta.headers["cache-control"] == "no-cache"
    assert beta.text == "[2024-02-03 00:00:00] #beta dave: beta line\n"
    assert server.get("/channelid/1002/random?raw").text == server.events[6].raw + "\n"
    assert server.events[6].channel == "beta"
    carol = {"hi bob", "great stream"}
    for _ in range(3):
        picked = server.get("/channel/alpha/user/carol/random?json").json()["messages"]
        assert len(picked) == 1 and picked[0]["text"] in carol and picked[0]["username"] == "carol"
    for _ in range(10):
        assert server.get("/channel/beta/random").text == "[2024-02-03 00:00:00] #beta dave: beta line\n"
        assert server.get("/channel/beta/user/dave/random?json").json()["messages"][0]["type"] == 1
    day = server.get("/channel/beta/2024/2/3").text.splitlines()
    assert day[1] == "[2024-02-03 00:00:01] #beta a message of dave was deleted: beta line"
    seen = {server.get("/channel/alpha/random").text for _ in range(5)}
    assert all(line.count("\n") == 1 and line.startswith("[") and "#alpha" in line for line in seen)
    cases = {
        "/channel/nochan/random": (404, "nochan"),
        "/channel/alpha/user/nobody/random": (404, "nobody"),
        "/channel/alpha/userid/999/random": (404, "999"),
        "/channelid/999/random": (404, "999"),
    }
    _refused(server, cases)


def test_stats(server: Server) -> None:
    jan2 = "from=2024-01-02T00:00:00Z&to=2024-01-02T23:59:59Z"
    assert server.get(f"/channel/alpha/stats?{jan2}").json() == {
        "messageCount": 5,
        "topChatters": [
            {"userId": "42", "userLogin": "bob", "messageCount": 2},
            {"userId": "43", "userLogin": "carol", "messageCount": 2},
        ],
    }
    big = server.get("/channelid/1001/stats?from=2023-12-30T00:00:00Z&to=2023-12-30T23:59:59Z").json()
    assert big["messageCount"] == BIG
    assert [c["userLogin"] for c in big["topChatters"]] == ["u0", "u1", "u10", "u11", "u12"]
    assert {c["messageCount"] for c in big["topChatters"]} == {BIG // 50}
    assert server.get("/channel/alpha/stats").json() == {"messageCount": 0, "topChatters": []}  # last 30 days
    bob = {"userId": "42", "userLogin": "bob", "messageCount": 4}  # 3 lines and a timeout
    assert server.get("/channel/alpha/user/bob/stats").json() == bob
    assert server.get("/channel/alpha/userid/42/stats").json() == bob
    assert server.get(f"/channel/alpha/user/bob/stats?{jan2}").json()["messageCount"] == 3
    cases = {
        "/channel/alpha/user/nobody/stats": (404, "nobody"),  # as every other route of an unknown user
        "/channel/alpha/stats?to=2020-01-01T00:00:00Z": (400, "give from too"),
        "/channel/nochan/stats": (404, "nochan"),
        "/channel/alpha/userid/999/stats": (404, "999"),
        "/channel/alpha/stats?from=soon": (400, "from"),
        "/channel/alpha/user/bob/stats?to=x": (400, "to"),
        "/channel/alpha/stats?from=2024-01-03T00:00:00Z&to=2024-01-02T00:00:00Z": (400, "from"),
    }
    _refused(server, cases)


def test_capabilities(server: Server) -> None:
    response = server.get("/capabilities")
    names = response.json()
    assert {"arbitrary-range-query", "stats", "random", "recent-messages"} <= set(names)
    assert response.headers["x-rustlog-capabilities"] == ",".join(names)
    assert server.get("/channels").headers["x-rustlog-capabilities"] == ",".join(names)


def test_what_the_justlog_and_rustlog_web_frontends_read(server: Server) -> None:
    """Contract, from their sources: justlog's web/src (useChannels, useAvailableLogs, useLog with ?json,
    types/log.ts RawLogMessage, Message.tsx) and rustlog's frontend (boring-nick/justlog frontend-only-new:
    useLog with ?jsonBasic, BasicLogMessage, Message.tsx that strips ``tags["system-msg"] + " "``)."""
    channels = server.get("/channels").json()["channels"]
    assert all(set(c) >= {"userID", "name"} and isinstance(c["name"], str) for c in channels)
    logs = server.get("/list?channel=alpha&user=carol").json()["availableLogs"]
    assert {"year": "2024", "month": "1"} in logs and all(
        isinstance(v, str) for m in logs for v in m.values()
    )
    justlog = server.get("/channel/alpha/user/carol/2024/1?json&reverse=1").json()["messages"]
    types = {"text": str, "systemText": str, "username": str, "displayName": str, "channel": str,
             "timestamp": str, "type": int, "raw": str, "id": str, "tags": dict}  # fmt: skip
    for message in justlog:
        assert {k: type(message[k]) for k in types} == types, message
        assert all(isinstance(v, str) for v in message["tags"].values())
    # Message.tsx: systemText (italics), then text with the emotes of tags.emotes at their positions
    assert [(m["systemText"], m["text"]) for m in justlog] == [
        ("carol subscribed at Tier 1.", "great stream"),
        ("", "hi bob"),
    ]
    timeout = server.get("/channel/alpha/user/bob/2024/1?json").json()["messages"][1]
    assert (timeout["displayName"], timeout["text"], timeout["systemText"]) == (
        "bob", "", "bob has been timed out for 600 seconds"
    )  # fmt: skip
    rustlog = server.get("/channel/alpha/user/carol/2024/1?jsonBasic&reverse=1").json()["messages"]
    basic = {"text": str, "displayName": str, "timestamp": str, "id": str, "tags": dict}
    for message in rustlog:
        assert {k: type(message[k]) for k in message} == basic, message
    sub = rustlog[0]
    shown = sub["text"].replace(sub["tags"]["system-msg"] + " ", "")  # rustlog's Message.tsx
    assert (sub["displayName"], shown) == ("Carol", "great stream")
    ban = server.get("/channel/alpha/user/bob/2024/1?jsonBasic").json()["messages"][1]
    assert (ban["displayName"], ban["text"]) == ("bob", "bob has been timed out for 600 seconds")
