"""A day's answer read ahead: its lines as the answer holds them, a failure where the reading met it, and a
reading closed before its end stops."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from chatlog.fill.ahead import QUEUE_CHUNKS, ReadAhead
from chatlog.fill.peer import PeerFailed

URL = "http://peer.test/channel/forsen/2026/11/20?raw"


def client(body: Iterator[bytes]) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(lambda _request: httpx.Response(200, content=body)))


def test_the_lines_come_as_the_answer_holds_them_across_chunks() -> None:
    with client(iter([b"a\nb", b"b\nc", b"\n"])) as http:
        ahead = ReadAhead(http, URL)
        assert [line.rstrip() for line in ahead.lines()] == [b"a", b"bb", b"c"]
        assert ahead.read1() == b""  # the end stays the end


def test_a_cut_answer_raises_after_the_lines_before_the_cut() -> None:
    def cut() -> Iterator[bytes]:
        yield b"a\n"
        raise httpx.ReadError("connection reset by peer")

    with client(cut()) as http:
        got: list[bytes] = []
        with pytest.raises(PeerFailed) as failed:
            got.extend(ReadAhead(http, URL).lines())
    assert got == [b"a\n"] and failed.value.away


def test_a_reading_closed_before_its_end_stops() -> None:
    sent = 0

    def endless() -> Iterator[bytes]:
        nonlocal sent
        while True:
            sent += 1
            yield b"x\n"

    with client(endless()) as http:
        ahead = ReadAhead(http, URL)
        first = next(iter(ahead.lines()))
        ahead.close()
        ahead._thread.join(5)
    assert first == b"x\n" and not ahead._thread.is_alive()
    assert sent <= QUEUE_CHUNKS + 3  # it read no further than the queue holds
