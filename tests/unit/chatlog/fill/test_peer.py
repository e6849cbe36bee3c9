"""Asking a peer: its lines, or one line saying why there are none."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import httpx
import pytest

from chatlog.fill.peer import PeerFailed, client, raw_lines, retry_after_s

URL = "http://peer.test/channel/forsen/2026/11/20?raw&from=1&to=2"


def answering(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler), timeout=httpx.Timeout(2.0))


def test_the_lines_of_a_text_answer_come_as_they_are() -> None:
    body = b"@id=1 :a!a@a PRIVMSG #forsen :x\r\n@id=2 :a!a@a PRIVMSG #forsen :y\n"

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["from"] == "1" and "raw" in request.url.params
        return httpx.Response(200, content=body, headers={"content-type": "text/plain; charset=utf-8"})

    with answering(handler) as http:
        assert [line.rstrip() for line in raw_lines(http, URL)] == body.rstrip().splitlines()


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (
            httpx.Response(404, text="could not load logs\n"),
            "has no lines of that time (HTTP 404: could not load logs)",
        ),
        (httpx.Response(500), "answered HTTP 500"),
        (
            httpx.Response(200, text="<html>hi</html>", headers={"content-type": "text/html"}),
            "answered text/html, not raw IRC lines",
        ),
        (httpx.Response(200, json={"messages": []}), "answered application/json, not raw IRC lines"),
    ],
)
def test_an_error_or_a_page_is_one_line(response: httpx.Response, message: str) -> None:
    with answering(lambda _request: response) as http, pytest.raises(PeerFailed) as failed:
        list(raw_lines(http, URL))

    assert str(failed.value) == message and not failed.value.away and not failed.value.wait


def test_a_peer_too_slow_is_away() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with answering(handler) as http, pytest.raises(PeerFailed) as failed:
        list(raw_lines(http, URL))

    assert str(failed.value) == "did not answer within 2 s (timed out)" and failed.value.away


def test_a_peer_that_trickles_past_the_limit_is_away() -> None:
    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=iter([b"a\n", b"b\n", b"c\n"]))

    with answering(handler) as http, pytest.raises(PeerFailed) as failed:
        list(raw_lines(http, URL, limit_s=0))

    assert str(failed.value) == "the answer took more than 0 s" and failed.value.away


def test_a_peer_that_is_down_is_away() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with client(2.0) as http, pytest.raises(PeerFailed) as failed:
        list(raw_lines(http, f"http://127.0.0.1:{port}/channel/x/2026/1/1?raw"))

    assert str(failed.value).startswith("is not reachable: ") and failed.value.away


@pytest.mark.parametrize(
    ("response", "wait_s", "message"),
    [
        (httpx.Response(429, headers={"retry-after": "7"}), 7.0, "asks to wait (HTTP 429, Retry-After 7 s)"),
        (httpx.Response(503), None, "asks to wait (HTTP 503)"),
    ],
)
def test_a_peer_that_asks_to_wait_says_how_long(
    response: httpx.Response, wait_s: float | None, message: str
) -> None:
    with answering(lambda _request: response) as http, pytest.raises(PeerFailed) as failed:
        list(raw_lines(http, URL))

    assert (str(failed.value), failed.value.wait, failed.value.wait_s) == (message, True, wait_s)


def test_a_connection_cut_midway_is_away() -> None:
    def cut() -> Iterator[bytes]:
        yield b"@id=1 :a!a@a PRIVMSG #forsen :x\n"
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    with answering(lambda _request: httpx.Response(200, content=cut())) as http:
        got: list[bytes] = []
        with pytest.raises(PeerFailed) as failed:
            got.extend(raw_lines(http, URL))

    assert len(got) == 1 and failed.value.away
    assert str(failed.value).startswith("cut the answer: RemoteProtocolError: peer closed connection")


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = 1_700_000_000.0
    assert retry_after_s("120", now) == 120.0
    assert retry_after_s("Tue, 14 Nov 2023 22:13:27 GMT", now) == 7.0
    assert retry_after_s("Tue, 14 Nov 2023 22:00:00 GMT", now) == 0.0  # already past
    assert retry_after_s("soon", now) is None
    assert retry_after_s(None, now) is None
