"""serve/api/stream.py: a log answer in every format is the bytes its lines' parsed events make (chat messages
are read the short way, the other lines parsed), ``offset`` and ``limit`` applied."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fastapi.responses import StreamingResponse

from core.irc_parse import parse_line
from lab.bench.storage import corpus
from schemas.chat_event import ChatEvent
from serve.api.params import Format, LogQuery
from serve.api.stream import CHUNK_LINES, WHOLE_LINES, stream_events
from serve.formats import (
    basic_message,
    encode_json,
    full_message,
    json_message,
    page_message,
    text_line,
)
from store import frame
from store.blocks import framed
from store.line import LogLine, Run, Span
from tests.unit.store.stored_lines import NOW, every_event, stored_row

_ARRAY: dict[Format, Callable[[ChatEvent], dict[str, Any]]] = {
    Format.JSON: json_message,
    Format.JSON_BASIC: basic_message,
}
_LINES: dict[Format, Callable[[ChatEvent], bytes]] = {
    Format.NDJSON: lambda e: encode_json(full_message(e)) + b"\n",
    Format.WEB: lambda e: encode_json(page_message(e)) + b"\n",
    Format.TEXT: lambda e: text_line(e).encode() + b"\n",
    Format.RAW: lambda e: e.raw.encode() + b"\n",
}


def _lines() -> list[LogLine]:
    rows = [LogLine(*stored_row(e), e.channel) for e in every_event()]
    rows.append(LogLine(":bob!b@h PRIVMSG #c a b :the general parameter shape", "m", 1_000, None, "c"))
    rows.append(LogLine("not irc at all", "n", 2_000, None, "c"))
    return rows


def _answer(lines: list[LogLine], fmt: Format, offset: int, limit: int | None) -> bytes:
    async def events() -> AsyncIterator[Run]:  # runs of 1 to 97 lines and an empty one: offset and limit
        at, size = 0, 1  # fall inside runs and on their edges
        yield []
        while at < len(lines):
            yield lines[at : at + size]
            at, size = at + size, size * 3 % 97 + 1

    query = LogQuery(format=fmt, reverse=False, limit=limit, offset=offset, since_ms=None, until_ms=None)
    counted: list[int] = []
    response = asyncio.run(stream_events(events(), query, empty="none", count=counted.append))
    assert counted == [len(lines[offset:][:limit])]
    return bytes(response.body)


def _expected(lines: list[LogLine], fmt: Format) -> bytes:
    events = [LogLine(line.stored, line.message_id, line.sent_at, line.received_at, line.channel_hint).event
              for line in lines]  # fmt: skip
    if fmt in _ARRAY:
        return b'{"messages":[' + b",".join(encode_json(_ARRAY[fmt](e)) for e in events) + b"]}"
    return b"".join(_LINES[fmt](e) for e in events)


@pytest.mark.parametrize("fmt", list(Format))
@pytest.mark.parametrize(("offset", "limit"), [(0, None), (7, 50)])
def test_an_answer_is_its_lines_parsed_events_in_the_format(
    fmt: Format, offset: int, limit: int | None
) -> None:
    lines = _lines()
    assert len(lines) > 600 and sum(line.privmsg() is None for line in lines) > 10
    assert _answer(lines, fmt, offset, limit) == _expected(lines[offset:][:limit], fmt)


def _spans(events: list[ChatEvent], per_frame: int) -> tuple[list[ChatEvent], list[Run]]:
    """The events framed as the writer frames them, ``per_frame`` to a frame, in line order, and each frame
    as the reader hands it on: a span of all its lines, then of every other line, then of none."""
    items = sorted(((framed(e), e) for e in events), key=lambda pair: pair[0].order)
    ordered: list[ChatEvent] = []
    runs: list[Run] = []
    for start in range(0, len(items), per_frame):
        chunk = items[start : start + per_frame]
        decoded = frame.decode(frame.encode([item.line for item, _ in chunk]))
        half = len(chunk) // 2
        runs += [
            Span(decoded, range(half), None, "hint"),
            Span(decoded, list(range(half, len(chunk))), None, "h"),
        ]
        runs.append(Span(decoded, [], None, "hint"))
        ordered += [e for _, e in chunk]
    return ordered, runs


@pytest.mark.parametrize("fmt", list(Format))
def test_an_answer_of_blocks_spans_is_their_lines_parsed_events_in_the_format(fmt: Format) -> None:
    """A span's chat messages whose tags are plain are made from its frame's columns, every other line from
    its own line (:func:`serve.formats.log_json_run` and the others): the same bytes as line by line."""
    parsed = [parse_line(raw, received_at=NOW) for raw in corpus(400)]
    events, runs = _spans(every_event() + [e for e in parsed if e is not None], per_frame=97)
    plain = sum(sum(p is not None for p in run.plain_privmsgs()) for run in runs if isinstance(run, Span))
    assert plain > 400 and len(events) - plain > 50  # both ways taken

    async def answer() -> bytes:
        async def each() -> AsyncIterator[Run]:
            for run in runs:
                yield run

        query = LogQuery(format=fmt, reverse=False, limit=None, offset=0, since_ms=None, until_ms=None)
        response = await stream_events(each(), query, empty="none", count=lambda _: None)
        return bytes(response.body)

    expected = [LogLine.of(e) for e in events]
    assert asyncio.run(answer()) == _expected(expected, fmt)


async def _streamed(runs: list[Run], query: LogQuery) -> tuple[bool, list[bytes], list[int]]:
    """Whether the answer is streamed, its body's pieces as sent, and the lines counted."""
    counted: list[int] = []

    async def events() -> AsyncIterator[Run]:
        for run in runs:
            yield run

    response = await stream_events(events(), query, empty="none", count=counted.append)
    if not isinstance(response, StreamingResponse):
        return False, [bytes(response.body)], counted
    return True, [bytes(part) async for part in response.body_iterator], counted  # type: ignore[arg-type]


@pytest.mark.parametrize(("offset", "limit"), [(0, None), (1_234, None), (10, 2_600), (0, 2_000)])
def test_a_run_longer_than_an_answer_sent_whole_is_streamed_a_chunk_at_a_time(
    offset: int, limit: int | None
) -> None:
    """A block's run may hold a packed channel day (tens of thousands of lines): it is made and sent at most
    CHUNK_LINES lines at a time, what an answer sent whole would hold first, the rest streamed, the bytes
    those of the lines one by one, offset and limit applied across it."""
    lines = [line for _ in range(8) for line in _lines()][:5_000]
    query = LogQuery(
        format=Format.TEXT, reverse=False, limit=limit, offset=offset, since_ms=None, until_ms=None
    )
    streamed, parts, counted = asyncio.run(_streamed([lines[:1], lines[1:]], query))
    wanted = lines[offset:][:limit]
    assert b"".join(parts) == _expected(wanted, Format.TEXT) and counted == [len(wanted)]
    assert streamed is (len(wanted) > WHOLE_LINES)
    if streamed:
        assert WHOLE_LINES <= parts[0].count(b"\n") < WHOLE_LINES + CHUNK_LINES  # what a whole answer holds
        assert max(part.count(b"\n") for part in parts[1:]) <= CHUNK_LINES
