"""A day's answer asked for ahead: its lines as the answer holds them, a failure where the asking or the
reading met it, a body left unread until its lines are asked for, and an answer closed before its head
came closed when it comes."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from chatlog.fill.ahead import ReadAhead
from chatlog.fill.peer import PeerFailed

URL = "http://peer.test/channel/forsen/2026/11/20?raw"


def client(body: Iterator[bytes]) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(lambda _request: httpx.Response(200, content=body)))


def test_the_lines_come_as_the_answer_holds_them_across_chunks() -> None:
    with client(iter([b"a\nb", b"b\nc", b"\n"])) as http:
        ahead = ReadAhead(http, URL)
        assert [line.rstrip() for line in ahead.lines()] == [b"a", b"bb", b"c"]


def test_a_cut_answer_raises_after_the_lines_before_the_cut() -> None:
    def cut() -> Iterator[bytes]:
        yield b"a\n"
        raise httpx.ReadError("connection reset by peer")

    with client(cut()) as http:
        got: list[bytes] = []
        with pytest.raises(PeerFailed) as failed:
            got.extend(ReadAhead(http, URL).lines())
    assert got == [b"a\n"] and failed.value.away


def test_an_answer_that_asks_to_wait_is_raised_where_its_lines_are_asked_for() -> None:
    answer = httpx.Response(429, headers={"Retry-After": "4"})
    with httpx.Client(transport=httpx.MockTransport(lambda _request: answer)) as http:
        ahead = ReadAhead(http, URL)  # nothing raised here: the asking runs on its own
        with pytest.raises(PeerFailed) as failed:
            next(iter(ahead.lines()))
    assert (failed.value.wait, failed.value.wait_s) == (True, 4.0)


def test_the_body_is_read_only_when_its_lines_are_asked_for() -> None:
    sent = 0

    def endless() -> Iterator[bytes]:
        nonlocal sent
        while True:
            sent += 1
            yield b"x\n"

    with client(endless()) as http:
        ahead = ReadAhead(http, URL)
        ahead._thread.join(5)
        before = sent
        first = next(iter(ahead.lines()))
        ahead.close()
    assert (before, first) == (0, b"x\n") and sent <= 2


class Watched(httpx.SyncByteStream):
    def __init__(self) -> None:
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        yield b"x\n"

    def close(self) -> None:
        self.closed = True


def test_an_answer_closed_before_its_head_came_is_closed_when_it_comes() -> None:
    release = threading.Event()
    body = Watched()

    def slow(_request: httpx.Request) -> httpx.Response:
        release.wait(5)
        return httpx.Response(200, stream=body)

    with httpx.Client(transport=httpx.MockTransport(slow)) as http:
        ahead = ReadAhead(http, URL)
        ahead.close()
        release.set()
        ahead._thread.join(5)
        with pytest.raises(PeerFailed, match="closed before it was read"):
            next(iter(ahead.lines()))
    assert body.closed
