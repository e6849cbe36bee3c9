"""The app on an in-memory store: storage failures are 503s or a cut body, never a 500 or a traceback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cassandra import OperationTimedOut, ReadTimeout
from cassandra.cluster import NoHostAvailable

from consent.settings import ConsentSettings
from core.settings import load
from schemas.chat_event import ChatEvent
from serve.api import stream
from serve.api.app import create_app
from serve.api.middleware import MAX_BODY_BYTES
from serve.settings import ServeSettings
from serve.testing import MemoryStore
from tests.uvicorn_thread import served

DAY = 1_704_153_600_000  # 2024-01-02


def _event(i: int) -> ChatEvent:
    return ChatEvent(
        message_id=f"m{i}", kind="PRIVMSG", channel="alpha", channel_id="1", user_login="bob",
        text=f"line {i}", sent_at=DAY + i * 1000, received_at=DAY + i * 1000, raw=f"raw {i}",
    )  # fmt: skip


EVENTS = [_event(i) for i in range(5)]
TIMED_OUT = RuntimeError("Cassandra timed out")
EVENT_READS = ("channel_runs", "user_runs", "random_channel_event", "user_count", "senders")


def alpha_store(*, fail_at: int | None = None, down: bool = False) -> MemoryStore:
    """alpha (id 1) with bob's five lines; ``fail_at``: every read of events fails (a stream after that
    many lines); ``down``: the storage does not answer a ping."""
    fail: dict[str, BaseException] = {"ping": RuntimeError("no host available")} if down else {}
    if fail_at is not None:
        fail.update(dict.fromkeys(EVENT_READS, TIMED_OUT))
    return MemoryStore(EVENTS, fail=fail, lines_before_failure=fail_at or 0)


def _get(store: MemoryStore, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        app = create_app(load(ServeSettings), store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get(path)

    return asyncio.run(go())


def test_storage_failure_before_the_first_line_is_a_503() -> None:
    response = _get(alpha_store(fail_at=0), "/channel/alpha/2024/1/2")
    assert response.status_code == 503
    assert response.json() == {"status": 503, "message": "the log storage did not answer; try again"}


@contextlib.contextmanager
def _served(store: MemoryStore) -> Iterator[str]:
    """The app on ``store`` under uvicorn on a free loopback port (a real socket); its base URL."""
    app = create_app(load(ServeSettings), store, consent=ConsentSettings(serve_consent=False))  # no Kafka
    with served(app, log_level="critical", start_s=20) as url:
        yield url


def test_storage_failure_within_a_whole_answer_is_a_503_not_a_part_of_it() -> None:
    response = _get(alpha_store(fail_at=3), "/channel/alpha/2024/1/2")  # 5 lines: sent whole, or not at all
    assert response.status_code == 503
    assert response.json() == {"status": 503, "message": "the log storage did not answer; try again"}


def test_an_answer_up_to_whole_lines_has_its_length_a_longer_one_is_streamed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = _get(alpha_store(), "/channel/alpha/2024/1/2")
    assert whole.headers["content-length"] == str(len(whole.content)) and len(whole.text.splitlines()) == 5
    monkeypatch.setattr(stream, "WHOLE_LINES", 2)
    streamed = _get(alpha_store(), "/channel/alpha/2024/1/2?json")
    assert "content-length" not in streamed.headers
    assert len(streamed.json()["messages"]) == 5


def test_storage_failure_mid_stream_cuts_the_connection_so_the_client_sees_an_incomplete_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream, "WHOLE_LINES", 2)  # the answer has started when the read fails
    with _served(alpha_store(fail_at=3)) as url:
        for fmt in ("json", "raw", "ndjson", "text"):
            with pytest.raises(httpx.RemoteProtocolError):  # no last chunk: never a complete 200
                httpx.get(f"{url}/channel/alpha/2024/1/2?{fmt}")
        assert httpx.get(f"{url}/channel/alpha").status_code == 302  # the server is fine afterwards
    with _served(alpha_store()) as url:
        complete = httpx.get(f"{url}/channel/alpha/2024/1/2?json")
        assert complete.text.endswith("]}") and len(complete.json()["messages"]) == 5


def test_head_answers_like_get_without_a_body_and_every_answer_says_nosniff() -> None:
    with _served(alpha_store()) as url:
        for path in ("/health", "/channels", "/channel/alpha/2024/1/2", "/channel/nosuch/2024/1/2"):
            got, head = httpx.get(url + path), httpx.head(url + path)
            assert head.status_code == got.status_code, path
            assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"], path
            assert got.headers["x-content-type-options"] == "nosniff", path
        refused = httpx.post(f"{url}/channels")
        assert refused.status_code == 405 and "GET" in refused.headers["allow"]
        assert refused.json()["status"] == 405


def test_health() -> None:
    assert _get(alpha_store(), "/health").json() == {"status": "ok"}
    down = _get(alpha_store(down=True), "/health")
    assert down.status_code == 503 and down.json()["reason"] == "RuntimeError: no host available"


def test_limit_and_offset_over_the_stream() -> None:
    text = _get(alpha_store(), "/channel/alpha/2024/1/2?offset=3&limit=10").text
    assert text.splitlines() == [
        "[2024-01-02 00:00:03] #alpha bob: line 3",
        "[2024-01-02 00:00:04] #alpha bob: line 4",
    ]


def test_unknown_routes_are_json_404s() -> None:
    for path in ("/nothing", "/channel/alpha/user/bob/nothing", "/channel/alpha/userid/7/2024/1"):
        response = _get(alpha_store(), path)
        assert response.status_code == 404, path
        body: dict[str, Any] = response.json()
        assert body["status"] == 404 and body["message"], path


def test_random_stats_and_recent_on_a_failing_store_are_503s() -> None:
    for path in ("/channel/alpha/random", "/channel/alpha/stats", "/channel/alpha/user/bob/stats"):
        response = _get(alpha_store(fail_at=0), path)
        assert response.status_code == 503, path
        assert response.json()["message"] == "the log storage did not answer; try again", path
    recent = _get(alpha_store(fail_at=0), "/api/v2/recent-messages/alpha")
    assert recent.status_code == 503 and recent.json()["error_code"] == "storage_unavailable"


def test_random_and_stats_on_the_store() -> None:
    assert (
        _get(alpha_store(), "/channel/alpha/user/bob/random").text
        == "[2024-01-02 00:00:00] #alpha bob: line 0\n"
    )
    assert _get(alpha_store(), "/channel/alpha/user/eve/random").status_code == 404
    assert _get(alpha_store(), "/channel/alpha/stats?from=2024-01-01T00:00:00Z").json() == {
        "messageCount": 5,
        "topChatters": [{"userId": "", "userLogin": "bob", "messageCount": 5}],
    }


def test_a_request_body_over_the_limit_is_a_413_whether_declared_or_chunked() -> None:
    big = b"x" * (MAX_BODY_BYTES + 1)

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    message = f"the request body is over {MAX_BODY_BYTES} bytes"
    JSON = "application/json"  # noqa: N806
    with _served(alpha_store()) as url:
        for body in (big, chunks()):  # a route that reads its body (FastAPI reads it before the key check)
            answer = httpx.post(f"{url}/admin/optout", content=body, headers={"Content-Type": JSON})
            assert (answer.status_code, answer.json()) == (413, {"status": 413, "message": message})
        small = httpx.post(f"{url}/admin/optout", json={"kind": "user", "id": "1"})
        assert small.status_code == 503  # read, and on to the route: consent is off here


def test_a_user_name_longer_than_any_login_is_a_404_that_does_not_echo_it() -> None:
    answer = _get(alpha_store(), f"/channel/alpha/user/{'a' * 5000}/2024/1")
    assert answer.status_code == 404
    assert answer.json()["message"] == "no user is named that: longer than 64 characters"
    longest = ChatEvent(
        message_id="m",
        kind="PRIVMSG",
        channel="alpha",
        user_login="a" * 64,
        text="hi",
        sent_at=DAY,
        received_at=DAY,
        raw="hi",
    )
    assert _get(MemoryStore([*EVENTS, longest]), f"/channel/alpha/user/{'a' * 64}/2024/1").status_code == 200


def test_no_route_or_dependency_runs_in_the_thread_pool() -> None:
    """FastAPI runs a plain ``def`` endpoint or dependency in its thread pool: a thread hop per request."""
    from fastapi.dependencies.models import Dependant

    def calls(dependant: Dependant) -> Iterator[Any]:
        if dependant.call is not None:
            yield dependant.call
        for sub in dependant.dependencies:
            yield from calls(sub)

    app = create_app(load(ServeSettings), alpha_store())
    routes = list(_api_routes(app.router.routes))
    sync = {f"{r.path}: {c.__name__}" for r in routes for c in calls(r.dependant) if not _is_async(c)}
    assert len(routes) > 20 and sync == set()


def _api_routes(routes: Any) -> Iterator[Any]:
    """Every APIRoute, also inside included routers (FastAPI >= 0.160 keeps them as routers)."""
    from fastapi.routing import APIRoute

    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _api_routes(inner.routes)


def _is_async(call: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(type(call).__call__)


def no_cassandra(error: Exception) -> MemoryStore:
    """Cassandra went away after the service started: the driver's own errors, on the name lookups."""
    return MemoryStore(EVENTS, fail={"latest_day": error, "channel_by_id": error})


@pytest.mark.parametrize(
    "error",
    [
        NoHostAvailable("Unable to complete the operation against any hosts", {}),
        OperationTimedOut("timed out"),
        ReadTimeout("Operation timed out - received only 0 responses."),
    ],
)
def test_a_cassandra_that_went_away_is_a_503_on_every_route_not_a_500(error: Exception) -> None:
    paths = ["/channel/alpha", "/channel/alpha/2024/1/2", "/channelid/1/2024/1/2", "/channel/alpha/random"]
    paths += ["/channel/alpha/search?q=x", "/channel/alpha/stats", "/channel/alpha/user/bob/2024/1"]
    paths += ["/list?channel=alpha"]
    for path in paths:
        response = _get(no_cassandra(error), path)
        assert response.status_code == 503, (path, response.text)
        assert response.json()["message"] == "the log storage did not answer; try again", path
        assert response.headers["retry-after"] == "5"


def test_a_repeated_parameter_is_its_first_value_as_in_go() -> None:
    # justlog's clients were written against Go's Query().Get: the first of repeated values
    assert _get(alpha_store(), "/list?channel=alpha&channel=nochan").status_code == 200
    assert _get(alpha_store(), "/list?channel=nochan&channel=alpha").status_code == 404
    assert _get(alpha_store(), "/channel/alpha/2024/1/2?limit=1&limit=abc").status_code == 200


@pytest.mark.parametrize("freeze", [False, True])
def test_a_started_server_leaves_what_it_holds_out_of_the_collections_when_asked(freeze: bool) -> None:
    import gc

    from fastapi.testclient import TestClient

    gc.unfreeze()
    app = create_app(
        load(ServeSettings), alpha_store(), consent=ConsentSettings(serve_consent=False), freeze=freeze
    )
    try:
        with TestClient(app) as client:
            assert client.get("/channel/alpha/user/bob/2024/1").status_code == 200
            frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
    assert (frozen > 10_000) is freeze  # the modules and the app, frozen once started
