"""A log response: events to bytes in the asked format, ``offset``/``limit`` applied on the way, run by run
(:data:`store.line.Run`).

Up to :data:`WHOLE_LINES` lines are read before the response starts, so a storage failure (or an empty
range) is still an ordinary error answer, and an answer that ends there (a user's month, usually) is sent
whole with its length; a longer one is streamed from there, chunk by chunk as pages arrive (about
:data:`CHUNK_LINES` lines or the end of a page per chunk), never the whole range in memory.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Final

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from core.times import now_ms
from serve.api.middleware import StreamCut
from serve.api.params import Format, LogQuery
from serve.errors import ApiError, not_found
from serve.formats import log_basic_run, log_full_run, log_json_run, log_page_run, log_text_run
from store.line import Run, aclose

CHUNK_LINES: Final = 500
WHOLE_LINES: Final = 2000
"""An answer of at most this many lines is sent whole: a streamed one costs a task group, chunked framing
and a send per chunk through every middleware (~15 % of a user-month's serving CPU); ~1 MB of text at most
is held per request."""
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


async def answer_lines(
    request: Request, events: AsyncIterator[Run], query: LogQuery, hi: int, empty: str
) -> Response:
    """The answer of a log route: ``events`` as ``query`` asks (:func:`stream_events`; a 404 saying
    ``empty`` when there are none), counted (:func:`line_counter`), cacheable as a range that ends at ``hi``
    is (:func:`cache_headers`)."""
    return await stream_events(
        events, query, empty=empty, count=line_counter(request, query), headers=cache_headers(hi)
    )


def _encoder(fmt: Format) -> Callable[[Run], bytes]:
    """A run's lines' bytes in ``fmt`` (a json array's without the commas before and after): text and raw
    without parsing them, the json formats of a chat message without parsing it whole
    (:class:`~store.line.LogLine`)."""
    if fmt is Format.TEXT:
        return log_text_run
    if fmt is Format.RAW:
        return lambda run: "".join([line.raw + "\n" for line in run]).encode()
    if fmt is Format.JSON_BASIC:
        return log_basic_run
    if fmt is Format.JSON:
        return log_json_run
    if fmt is Format.WEB:
        return log_page_run
    return log_full_run


class _Body:
    """A log answer's bytes in the asked format, ``offset``/``limit`` applied, made run by run."""

    def __init__(self, query: LogQuery) -> None:
        self.encode = _encoder(query.format)
        self.is_array = query.format in (Format.JSON, Format.JSON_BASIC)
        self.chunk: list[bytes] = [b'{"messages":['] if self.is_array else []
        self.lines = 0
        self.untaken = 0
        """Lines made since the last take."""
        self.skip = query.offset
        self.left = query.limit
        self.held: Run = []
        """What :func:`_whole` left of a run when it stopped at :data:`WHOLE_LINES` (:meth:`rest` starts
        there)."""

    @property
    def full(self) -> bool:
        """Whether ``limit`` lines are in."""
        return self.left is not None and self.left <= 0

    def add(self, run: Run) -> None:
        """Encode ``run``'s lines but those ``offset`` skips, up to ``limit``."""
        if self.skip:
            if len(run) <= self.skip:
                self.skip -= len(run)
                return
            run, self.skip = run[self.skip :], 0
        left = self.left
        if left is not None:
            if len(run) > left:
                run = run[:left]
            self.left = left - len(run)
        if run:
            if self.is_array and self.lines:
                self.chunk.append(b",")
            self.chunk.append(self.encode(run))
            self.lines += len(run)
            self.untaken += len(run)

    def take(self) -> bytes:
        """The bytes made since the last take."""
        made = b"".join(self.chunk)
        self.chunk.clear()
        self.untaken = 0
        return made

    def end(self) -> bytes:
        """The rest of the answer's bytes, with its end."""
        if self.is_array:
            self.chunk.append(b"]}")
        return self.take()

    def _made(self, run: Run) -> Iterator[bytes]:
        """Add ``run`` piece by piece (:func:`_pieces`), its bytes taken whenever a chunk's worth is made."""
        for piece in _pieces(run):
            self.add(piece)
            if self.untaken >= CHUNK_LINES:
                yield self.take()
            if self.full:
                return

    async def rest(self, runs: AsyncIterator[Run], count: Callable[[int], None]) -> AsyncIterator[bytes]:
        """The bytes made so far, then those of what :func:`_whole` held and of the rest of ``runs``, chunk
        by chunk."""
        try:
            yield self.take()
            for made in self._made(self.held):
                yield made
            if not self.full:
                async for run in runs:  # straight from the store: no generator step per line in between
                    for made in self._made(run):
                        yield made
                    if self.full:
                        break
        except (
            Exception
        ) as exc:  # the status line is sent: the connection is cut (no last chunk); log says why
            log.warning(
                "response cut short after %d lines: %s: %s", self.lines, type(exc).__name__, str(exc)[:200]
            )
            raise StreamCut from None
        finally:
            count(self.lines)
            await aclose(runs)
        yield self.end()


async def _read(runs: AsyncIterator[Run]) -> Run | None:
    """The next run that has lines, or None at the end; a storage failure before the answer starts is a
    503."""
    try:
        while (run := await anext(runs, None)) is not None:
            if run:
                return run
        return None
    except ApiError:
        raise
    except Exception as exc:
        log.warning("reading the logs failed: %s: %s", type(exc).__name__, str(exc)[:200])
        raise ApiError(503, "the log storage did not answer; try again") from None


def _pieces(run: Run) -> Sequence[Run]:
    """``run`` in slices of at most :data:`CHUNK_LINES` lines: a block's run may be a packed channel day of
    tens of thousands of lines, and an answer is made and sent a chunk at a time, never whole in memory."""
    if len(run) <= CHUNK_LINES:
        return (run,)
    return [run[at : at + CHUNK_LINES] for at in range(0, len(run), CHUNK_LINES)]


async def _whole(first: Run, runs: AsyncIterator[Run], body: _Body) -> bool:
    """Add ``first`` and then ``runs``' lines to ``body`` until its limit, their end or :data:`WHOLE_LINES`;
    whether there are more to stream (what is left of the run then: ``body.held``). A storage failure
    meanwhile is a 503 (nothing is sent yet)."""
    run: Run | None = first
    try:
        while run is not None:
            pieces = _pieces(run)
            for at, piece in enumerate(pieces):
                body.add(piece)
                if body.full:
                    return False
                if body.lines >= WHOLE_LINES:
                    body.held = run[(at + 1) * CHUNK_LINES :]
                    return True
            run = await anext(runs, None)
    except ApiError:
        raise
    except Exception as exc:
        log.warning("reading the logs failed: %s: %s", type(exc).__name__, str(exc)[:200])
        raise ApiError(503, "the log storage did not answer; try again") from None
    return False


async def stream_events(
    events: AsyncIterator[Run],
    query: LogQuery,
    *,
    empty: str,
    count: Callable[[int], None],
    headers: dict[str, str] | None = None,
) -> Response:
    """The response for ``events`` (runs of lines); a 404 with ``empty`` when there is none, a 503 when
    storage fails before the answer starts. An answer of at most :data:`WHOLE_LINES` lines is sent whole,
    with its length; a longer one is streamed from there, chunk by chunk."""
    body = _Body(query)
    try:
        first = await _read(events)
        if first is None:
            raise not_found(empty)
        if await _whole(first, events, body):  # WHOLE_LINES lines made, more to come: streamed
            return StreamingResponse(
                body.rest(events, count), media_type=MEDIA_TYPES[query.format], headers=headers
            )
    except BaseException:
        await aclose(events)
        raise
    await aclose(events)
    count(body.lines)
    return Response(body.end(), media_type=MEDIA_TYPES[query.format], headers=headers)
