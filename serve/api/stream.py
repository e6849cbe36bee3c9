"""Streaming a log response: events to bytes in the asked format, ``offset``/``limit`` applied on the way.

The first event is read before the response starts, so a storage failure (or an empty range) is still an
ordinary error answer; after that the body is written chunk by chunk as pages arrive (about
:data:`CHUNK_LINES` lines or the end of a page per chunk), never the whole range in memory.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Final

from fastapi import Request
from fastapi.responses import StreamingResponse

from core.times import now_ms
from serve.api.errors import ApiError, not_found
from serve.api.middleware import StreamCut
from serve.api.params import Format, LogQuery
from serve.formats import basic_message, encode_json, full_message, json_message, log_text_line, page_message
from serve.store.row import LogLine, aclose

CHUNK_LINES: Final = 500
MEDIA_TYPES: Final = {
    Format.TEXT: "text/plain; charset=utf-8",
    Format.RAW: "text/plain; charset=utf-8",
    Format.JSON: "application/json",
    Format.JSON_BASIC: "application/json",
    Format.NDJSON: "application/x-ndjson",
    Format.WEB: "application/x-ndjson",
}
PAST_MAX_AGE_S: Final = 300
"""How long a shared cache may keep a past range: they rarely change, but do (an erasure or an opt-out
must not be served from caches for a day; an import or a late sink adds lines)."""
_NOW_SLACK_MS: Final = 60_000
log = logging.getLogger("chatlog.serve")


def cache_headers(hi: int) -> dict[str, str]:
    """Past ranges (ending before ``hi``): cacheable for :data:`PAST_MAX_AGE_S`; the current one: not
    without asking."""
    if hi + _NOW_SLACK_MS < now_ms():
        return {"Cache-Control": f"public, max-age={PAST_MAX_AGE_S}"}
    return {"Cache-Control": "no-cache"}


def line_counter(request: Request, query: LogQuery) -> Callable[[int], None]:
    """What counts the lines an answer in ``query``'s format sent (the ``lines`` metric)."""
    lines = request.app.state.metrics.lines.labels(query.format.value)
    count: Callable[[int], None] = lines.inc
    return count


def _encoder(fmt: Format) -> Callable[[LogLine], bytes]:
    """A line's bytes in ``fmt``: text and raw without parsing it (:class:`~serve.store.row.LogLine`)."""
    if fmt is Format.TEXT:
        return lambda line: log_text_line(line).encode() + b"\n"
    if fmt is Format.RAW:
        return lambda line: line.raw.encode() + b"\n"
    if fmt is Format.JSON_BASIC:
        return lambda line: encode_json(basic_message(line.event))
    if fmt is Format.JSON:
        return lambda line: encode_json(json_message(line.event))
    if fmt is Format.WEB:
        return lambda line: encode_json(page_message(line.event)) + b"\n"
    return lambda line: encode_json(full_message(line.event)) + b"\n"


async def _body(
    first: LogLine, events: AsyncIterator[LogLine], query: LogQuery, count: Callable[[int], None]
) -> AsyncIterator[bytes]:
    encode_one = _encoder(query.format)
    is_array = query.format in (Format.JSON, Format.JSON_BASIC)
    if is_array:
        yield b'{"messages":['
    chunk: list[bytes] = []
    lines = 0
    skip = query.offset
    left = query.limit

    def add(line: LogLine) -> bool:
        """Encode ``line`` unless ``offset`` skips it; False once ``limit`` lines are in."""
        nonlocal skip, left, lines
        if skip:
            skip -= 1
            return True
        if left is not None:
            if left <= 0:
                return False
            left -= 1
        if is_array and lines:
            chunk.append(b",")
        chunk.append(encode_one(line))
        lines += 1
        return True

    try:
        if add(first):
            async for line in events:  # straight from the store: no generator step per line in between
                if not add(line):
                    break
                if len(chunk) >= CHUNK_LINES:
                    yield b"".join(chunk)
                    chunk.clear()
    except Exception as exc:  # the status line is sent: the connection is cut (no last chunk); log says why
        log.warning("response cut short after %d lines: %s: %s", lines, type(exc).__name__, str(exc)[:200])
        raise StreamCut from None
    finally:
        count(lines)
        await aclose(events)
    if chunk:
        yield b"".join(chunk)
    if is_array:
        yield b"]}"


async def stream_events(
    events: AsyncIterator[LogLine],
    query: LogQuery,
    *,
    empty: str,
    count: Callable[[int], None],
    headers: dict[str, str] | None = None,
) -> StreamingResponse:
    """The response for ``events``; a 404 with ``empty`` when there is none, a 503 when storage fails."""
    try:
        first = await anext(events, None)
    except ApiError:
        raise
    except Exception as exc:
        log.warning("reading the logs failed: %s: %s", type(exc).__name__, str(exc)[:200])
        raise ApiError(503, "the log storage did not answer; try again") from None
    if first is None:
        raise not_found(empty)
    return StreamingResponse(
        _body(first, events, query, count), media_type=MEDIA_TYPES[query.format], headers=headers
    )
