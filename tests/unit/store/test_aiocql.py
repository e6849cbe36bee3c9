"""store.aiocql.PagedQuery with a double of the driver's ResponseFuture (its callbacks run on another
thread, as the driver's do): an error reaches whoever reads the pages, and a query nobody reads any more
(an abandoned read-ahead) fails without asyncio logging "exception was never retrieved"."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from core.testing_cassandra import FakeSession
from store.aiocql import PagedQuery


def _session(error: BaseException | None = None) -> FakeSession:
    """Answers 1, 2, 3, or fails with ``error``; its futures complete on another thread."""
    return FakeSession(lambda _call: [1, 2, 3], fail=lambda _call: error)


def test_pages_arrive_and_an_error_is_raised_to_the_reader() -> None:
    async def go() -> None:
        assert await PagedQuery(_session(), "q", ()).all() == [1, 2, 3]
        with pytest.raises(TimeoutError, match="slow"):
            await PagedQuery(_session(TimeoutError("slow")), "q", ()).all()

    asyncio.run(go())


def test_each_page_is_asked_for_once_the_one_before_is_taken() -> None:
    async def go() -> list[list[Any]]:
        return [
            page
            async for page in PagedQuery(FakeSession(lambda _call: [1, 2, 3], page_size=2), "q", ()).pages()
        ]

    assert asyncio.run(go()) == [[1, 2], [3]]


def test_the_only_page_is_given_when_no_page_follows_and_is_still_read_after() -> None:
    async def go(page_size: int | None) -> tuple[list[Any] | None, list[list[Any]]]:
        query = PagedQuery(FakeSession(lambda _call: [1, 2, 3], page_size=page_size), "q", ())
        only = await query.only_page()
        return only, [page async for page in query.pages()]

    assert asyncio.run(go(None)) == ([1, 2, 3], [[1, 2, 3]])
    assert asyncio.run(go(2)) == (None, [[1, 2], [3]])


def test_an_abandoned_query_that_fails_logs_nothing() -> None:
    reported: list[dict[str, Any]] = []

    async def go() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context))
        query = PagedQuery(_session(TimeoutError("slow")), "q", ())
        for _ in range(100):  # the error arrives; nobody reads the query
            await asyncio.sleep(0.01)
            if query._waiter.done():
                break
        assert query._waiter.done()
        del query
        gc.collect()
        await asyncio.sleep(0)

    asyncio.run(go())
    assert reported == []
