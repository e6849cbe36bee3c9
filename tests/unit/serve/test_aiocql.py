"""serve.aiocql.PagedQuery with a double of the driver's ResponseFuture (its callbacks run on another
thread, as the driver's do): an error reaches whoever reads the pages, and a query nobody reads any more
(an abandoned read-ahead) fails without asyncio logging "exception was never retrieved"."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from typing import Any

import pytest

from serve.aiocql import PagedQuery


class _Future:
    has_more_pages = False

    def __init__(self, error: BaseException | None, rows: list[Any]) -> None:
        self.error, self.rows = error, rows

    def add_callbacks(
        self, on_rows: Callable[[Any], None], on_error: Callable[[BaseException], None]
    ) -> None:
        def deliver() -> None:
            if self.error is not None:
                on_error(self.error)
            else:
                on_rows(self.rows)

        threading.Thread(target=deliver).start()


class _Session:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error

    def execute_async(self, statement: Any, params: Any) -> _Future:
        return _Future(self.error, [1, 2, 3])


def test_pages_arrive_and_an_error_is_raised_to_the_reader() -> None:
    async def go() -> None:
        assert await PagedQuery(_Session(), "q", ()).all() == [1, 2, 3]
        with pytest.raises(TimeoutError, match="slow"):
            await PagedQuery(_Session(TimeoutError("slow")), "q", ()).all()

    asyncio.run(go())


def test_an_abandoned_query_that_fails_logs_nothing() -> None:
    reported: list[dict[str, Any]] = []

    async def go() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context))
        query = PagedQuery(_Session(TimeoutError("slow")), "q", ())
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
