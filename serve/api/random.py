"""``GET /{ct}/{c}/random`` and ``GET /{ct}/{c}/{ut}/{u}/random``: one random line of a channel's (or a
user's) logs, in the asked format (text, ``?json``, ``?jsonBasic``, ``?raw``, ``?ndjson``), never cached
(justlog and rustlog). Every line about equally likely: :mod:`store.random_pick`."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import Response

from schemas.chat_event import ChatEvent
from serve.api.named import Subject, resolve_subject, store_of
from serve.api.params import LogQuery, output_format
from serve.api.query_docs import FORMATS, documented
from serve.api.stream import line_counter, stream_events
from store.line import LogLine, one_by_one

router = APIRouter()

_NO_CACHE = {"Cache-Control": "no-cache"}


async def _answer(request: Request, pick: AsyncIterator[LogLine], empty: str) -> Response:
    fmt = output_format(request.query_params)  # one line: no range, order or paging
    query = LogQuery(format=fmt, reverse=False, limit=None, offset=0, since_ms=None, until_ms=None)
    return await stream_events(
        one_by_one(pick), query, empty=empty, count=line_counter(request, query), headers=_NO_CACHE
    )


async def _picked(pick: AsyncIterator[ChatEvent | None]) -> AsyncIterator[LogLine]:
    async for event in pick:
        if event is not None:
            yield LogLine.of(event)


@router.get(
    "/{ct}/{c}/random", summary="One random line of the channel's logs", openapi_extra=documented(FORMATS)
)
async def random_channel_line(request: Request, ct: str, c: str) -> Response:
    return await _random_line(request, await resolve_subject(request, ct, c))


@router.get(
    "/{ct}/{c}/{ut}/{u}/random",
    summary="One random line of a user's logs in the channel",
    openapi_extra=documented(FORMATS),
)
async def random_user_line(request: Request, ct: str, c: str, ut: str, u: str) -> Response:
    return await _random_line(request, await resolve_subject(request, ct, c, ut, u))


async def _random_line(request: Request, subject: Subject) -> Response:
    """One random line of the subject's logs; a 404 when it has none."""
    store = store_of(request)

    async def pick() -> AsyncIterator[ChatEvent | None]:
        yield await subject.random_event(store)

    return await _answer(request, _picked(pick()), f"nothing stored for {subject}")
