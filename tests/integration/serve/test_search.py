"""`chatlog serve`'s search over a real socket: a user's lines in a channel (rustlog's ``/search``) and a
channel's lines in a time range, on events store.write stored in a fresh keyspace."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from core.settings import StackSettings
from schemas.chat_event import ChatEvent
from serve.api.search import check_admin
from serve.errors import ApiError
from serve.settings import ServeSettings
from tests.integration.serve.events import line_event, privmsg
from tests.integration.serve.server import Server, serving

pytestmark = pytest.mark.integration

JAN2 = int(datetime(2024, 1, 2, tzinfo=UTC).timestamp() * 1000)
FEB3 = int(datetime(2024, 2, 3, tzinfo=UTC).timestamp() * 1000)
MIN = 60_000
DAY1 = "from=2024-01-02T00:00:00Z&to=2024-01-02T23:59:59Z"


def _event(channel: str, at: int, user: str | None, text: str, *, kind: str = "PRIVMSG") -> ChatEvent:
    """A line of a channel with a room id whose users have none (as an old import's)."""
    room = "2001" if channel == "alpha" else "2002"
    if kind == "CLEARCHAT":  # a ban of `text`
        return line_event(kind, channel, at, text=text, room_id=room)
    return privmsg(channel, at, user, text, room_id=room, message_id=str(uuid.uuid4()))


def _events() -> list[ChatEvent]:
    return [
        _event("alpha", JAN2 + 1_000, "bob", "hello there"),
        _event("alpha", JAN2 + 10 * MIN, "bob", "HELLO again"),
        _event("alpha", JAN2 + 20 * MIN, "carol", "hello from carol"),
        _event("alpha", JAN2 + 30 * MIN, "bob", "Die Straße ist lang"),
        _event("alpha", JAN2 + 40 * MIN, "bob", "café au lait"),
        _event("alpha", JAN2 + 50 * MIN, "bob", "CAFE\u0301 NOIR"),  # É decomposed
        _event("alpha", JAN2 + 60 * MIN, "bob", "xfoo barx"),
        _event("alpha", JAN2 + 70 * MIN, None, "bob", kind="CLEARCHAT"),
        _event("alpha", FEB3 + 1_000, "bob", "unrelated"),
        _event("alpha", FEB3 + 60 * MIN, "bob", "hello in february"),
        _event("beta", JAN2 + 5 * MIN, "bob", "hello beta"),
    ]


ADMIN_KEY = "s3cret-admin-key"


@pytest.fixture(scope="module")
def server(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CHATLOG_SERVE_ADMIN_KEY", ADMIN_KEY)
        with serving(stack, tmp_path_factory, _events()) as running:
            yield running


def _texts(server: Server, path: str) -> list[str]:
    response = server.get(path)
    assert response.status_code == 200, response.text
    return [json.loads(line)["text"] for line in response.text.splitlines()]


def test_user_search_is_case_insensitive_and_stays_in_the_users_channel(server: Server) -> None:
    response = server.get("/channel/alpha/user/bob/search?q=HeLLo")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text.splitlines() == [
        "[2024-01-02 00:00:01] #alpha bob: hello there",
        "[2024-01-02 00:10:00] #alpha bob: HELLO again",
        "[2024-02-03 01:00:00] #alpha bob: hello in february",
    ]  # not carol's line, not bob's line in #beta
    assert server.get("/channelid/2001/user/bob/search?q=hello").text == response.text
    assert "search" in server.get("/capabilities").json()  # rustlog's name of this feature


def test_user_search_misses_and_unknowns_are_404s(server: Server) -> None:
    miss = server.get("/channel/alpha/user/bob/search?q=nowhere")
    assert miss.status_code == 404
    assert miss.json()["message"] == "no line of bob in #alpha contains 'nowhere'"
    nobody = server.get("/channel/alpha/user/nobody/search?q=hello")
    assert nobody.status_code == 404 and nobody.json()["message"] == "nothing stored for nobody in #alpha"
    channel = server.get("/channel/gamma/user/bob/search?q=hello")
    assert channel.status_code == 404 and "gamma" in channel.json()["message"]
    by_id = server.get("/channelid/999/user/bob/search?q=hello")
    assert by_id.status_code == 404 and "999" in by_id.json()["message"]


def test_unicode_folding_and_accents(server: Server) -> None:
    nd = "&ndjson"
    assert _texts(server, "/channel/alpha/user/bob/search?q=SS" + nd) == ["Die Straße ist lang"]
    assert _texts(server, "/channel/alpha/user/bob/search?q=STRASSE" + nd) == ["Die Straße ist lang"]
    assert _texts(server, "/channel/alpha/user/bob/search?q=stra%C3%9Fe" + nd) == ["Die Straße ist lang"]
    both = ["café au lait", "CAFE\u0301 NOIR"]
    assert _texts(server, "/channel/alpha/user/bob/search?q=CAF%C3%89" + nd) == both  # É composed
    assert _texts(server, "/channel/alpha/user/bob/search?q=cafe%CC%81" + nd) == both  # é decomposed
    assert server.get("/channel/alpha/user/bob/search?q=cafe").status_code == 404  # accents count


def test_a_term_split_across_words(server: Server) -> None:
    assert _texts(server, "/channel/alpha/user/bob/search?ndjson&q=foo%20bar") == ["xfoo barx"]
    assert _texts(server, "/channel/alpha/user/bob/search?ndjson&q=O+B") == ["xfoo barx"]
    assert server.get("/channel/alpha/user/bob/search?q=foobar").status_code == 404


def test_limit_offset_reverse_and_range(server: Server) -> None:
    base = "/channel/alpha/user/bob/search?ndjson&q=hello"
    assert _texts(server, base + "&limit=1") == ["hello there"]
    assert _texts(server, base + "&reverse") == ["hello in february", "HELLO again", "hello there"]
    assert _texts(server, base + "&reverse&limit=2") == ["hello in february", "HELLO again"]
    assert _texts(server, base + "&offset=1&limit=1") == ["HELLO again"]
    assert _texts(server, base + "&from=2024-02-01T00:00:00Z") == ["hello in february"]
    assert _texts(server, base + f"&to={(JAN2 + 5 * MIN) // 1000}") == ["hello there"]
    backwards = server.get(base + "&from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z")
    assert backwards.status_code == 400 and "from is after to" in backwards.json()["message"]
    bad_limit = server.get(base + "&limit=x")
    assert bad_limit.status_code == 400 and "limit" in bad_limit.json()["message"]


def test_formats(server: Server) -> None:
    body = server.get("/channel/alpha/user/bob/search?q=xfoo&json").json()
    assert [m["text"] for m in body["messages"]] == ["xfoo barx"]
    assert body["messages"][0]["username"] == "bob" and body["messages"][0]["channel"] == "alpha"
    basic = server.get("/channel/alpha/user/bob/search?q=xfoo&jsonBasic").json()["messages"]
    assert set(basic[0]) == {"text", "displayName", "timestamp", "id", "tags"}
    raw = server.get("/channel/alpha/user/bob/search?q=xfoo&raw")
    assert raw.text == next(e.raw for e in server.events if e.text == "xfoo barx") + "\n"


def test_bad_queries_are_400s_that_say_the_bound(server: Server) -> None:
    for path in ("search", "user/bob/search"):
        for q in ("", "?q=", "?q=%20%20"):
            response = server.get(f"/channel/alpha/{path}{q}")
            assert response.status_code == 400, (path, q)
            assert response.json()["message"].startswith("missing parameter: q"), (path, q)
        long = server.get(f"/channel/alpha/{path}?q=" + "a" * 201)
        assert long.status_code == 400
        assert long.json()["message"] == "invalid q: 201 characters, at most 200"
    at_the_bound = server.get("/channel/alpha/user/bob/search?ndjson&q=" + "é" * 200)
    assert at_the_bound.status_code == 404


def test_channel_search_over_a_range(server: Server) -> None:
    response = server.get(f"/channel/alpha/search?q=HELLO&{DAY1}")
    assert response.status_code == 200
    assert response.text.splitlines() == [
        "[2024-01-02 00:00:01] #alpha bob: hello there",
        "[2024-01-02 00:10:00] #alpha bob: HELLO again",
        "[2024-01-02 00:20:00] #alpha carol: hello from carol",
    ]
    assert server.get(f"/channelid/2001/search?q=hello&{DAY1}").text == response.text
    assert _texts(server, f"/channel/alpha/search?ndjson&reverse&limit=1&q=hello&{DAY1}") == [
        "hello from carol"
    ]
    assert _texts(server, f"/channel/alpha/search?ndjson&q=BANNED&{DAY1}") == ["bob has been banned"]
    week = "from=2024-01-01T00:00:00Z&to=2024-01-07T23:59:59Z"
    assert len(_texts(server, f"/channel/alpha/search?ndjson&q=hello&{week}")) == 3
    february = "from=2024-02-01T00:00:00Z&to=2024-02-07T23:59:59Z"
    assert _texts(server, f"/channel/alpha/search?ndjson&q=hello&{february}") == ["hello in february"]


def test_channel_search_errors(server: Server) -> None:
    now = server.get("/channel/alpha/search?q=hello")  # the last day: nothing logged now
    assert now.status_code == 404
    assert now.json()["message"] == "no line of #alpha in that range contains 'hello'"
    too_long = server.get("/channel/alpha/search?q=hello&from=2024-01-01T00:00:00Z&to=2024-01-09T00:00:00Z")
    assert too_long.status_code == 400
    assert too_long.json()["message"] == (
        "invalid range: 8.0 days; a channel search scans at most 7 days (give from and to closer together)"
    )
    unknown = server.get(f"/channel/gamma/search?q=hello&{DAY1}")
    assert unknown.status_code == 404 and unknown.json()["message"] == "channel 'gamma' is not logged"
    bad = server.get("/channel/alpha/search?q=hello&from=yesterday")
    assert bad.status_code == 400 and "from" in bad.json()["message"]


def test_admin_search_across_channels(server: Server) -> None:
    auth = {"Authorization": f"Bearer {ADMIN_KEY}"}
    path = f"/admin/user/bob/search?ndjson&q=HELLO&{DAY1}"
    response = server.get(path, headers=auth)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [(m["channel"], m["text"]) for m in lines] == [
        ("alpha", "hello there"),
        ("alpha", "HELLO again"),
        ("beta", "hello beta"),
    ]
    reverse = [
        json.loads(line)["text"] for line in server.get(path + "&reverse", headers=auth).text.splitlines()
    ]
    assert reverse == ["hello beta", "HELLO again", "hello there"]
    everything = _texts_with(server, f"/admin/user/bob/search?ndjson&{DAY1}", auth)
    # without q: every line of bob, and his ban
    assert len(everything) == 8 and everything[-2:] == ["bob has been banned", "hello beta"]
    miss = server.get(f"/admin/user/bob/search?q=nowhere&{DAY1}", headers=auth)
    assert miss.status_code == 404 and "nowhere" in miss.json()["message"]
    too_long = server.get(
        "/admin/user/bob/search?from=2024-01-01T00:00:00Z&to=2024-02-01T00:00:00Z", headers=auth
    )
    assert too_long.status_code == 400 and "at most 7 days" in too_long.json()["message"]


def _texts_with(server: Server, path: str, headers: dict[str, str]) -> list[str]:
    response = server.get(path, headers=headers)
    assert response.status_code == 200, response.text
    return [json.loads(line)["text"] for line in response.text.splitlines()]


def test_admin_search_needs_the_key(server: Server) -> None:
    path = f"/admin/user/bob/search?q=hello&{DAY1}"
    none = server.get(path)
    assert none.status_code == 401 and "Authorization: Bearer" in none.json()["message"]
    basic = server.get(path, headers={"Authorization": f"Basic {ADMIN_KEY}"})
    assert basic.status_code == 401
    wrong = server.get(path, headers={"Authorization": "Bearer not-the-key"})
    assert wrong.status_code == 403 and wrong.json()["message"] == "admin route: wrong key"
    assert ADMIN_KEY not in none.text + wrong.text
    prefix = server.get(path, headers={"Authorization": f"Bearer {ADMIN_KEY[:-1]}"})
    assert prefix.status_code == 403


def test_admin_routes_are_off_without_a_key() -> None:
    with pytest.MonkeyPatch.context() as env:
        env.delenv("CHATLOG_SERVE_ADMIN_KEY", raising=False)
        defaults: dict[str, Any] = {}
        settings = ServeSettings(**defaults)
    with pytest.raises(ApiError) as refused:
        check_admin(f"Bearer {ADMIN_KEY}", settings)
    assert refused.value.status == 403 and "CHATLOG_SERVE_ADMIN_KEY is not set" in refused.value.message
