"""cassandra-driver's futures, awaited from asyncio without a thread per request.

The driver completes a ``ResponseFuture`` on its own event-loop thread and calls the callbacks there;
:class:`PagedQuery` hands each page to the asyncio loop with ``call_soon_threadsafe``. A query starts when
it is made (so several can be in flight: the read-ahead of the next buckets), and its next page is asked
only when the current one has been taken, so a slow client holds at most one page per query in memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any


class PagedQuery:
    """One statement's pages, in order; the first is requested at construction."""

    def __init__(self, session: Any, statement: Any, params: Sequence[Any], profile: Any = None) -> None:
        """``profile``: an execution profile (its name, or one made by the session), else the default."""
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[list[Any]] = self._loop.create_future()
        if profile is None:
            self._future = session.execute_async(statement, params)
        else:
            self._future = session.execute_async(statement, params, execution_profile=profile)
        self._future.add_callbacks(self._on_rows, self._on_error)

    def _deliver(
        self, waiter: asyncio.Future[list[Any]], rows: list[Any] | None, exc: BaseException | None
    ) -> None:
        if waiter.done():  # cancelled: the client went away
            return
        if exc is not None:
            waiter.set_exception(exc)
            # whoever awaits it gets the exception all the same; a query nobody reads any more (a reader
            # that stopped early, its read-ahead abandoned) must not log "exception was never retrieved"
            waiter.exception()
        else:
            waiter.set_result(list(rows or ()))

    def _on_rows(self, rows: Any) -> None:  # the driver's thread
        self._loop.call_soon_threadsafe(self._deliver, self._waiter, rows, None)

    def _on_error(self, exc: BaseException) -> None:  # the driver's thread
        self._loop.call_soon_threadsafe(self._deliver, self._waiter, None, exc)

    async def first_page(self) -> list[Any]:
        """The rows of the first page; :meth:`pages` and :meth:`rows` still give it. Call it before taking
        any page."""
        return await self._waiter

    async def only_page(self) -> list[Any] | None:
        """The rows of the first page when no page follows it (None when more do); :meth:`pages` and
        :meth:`rows` still give it. Call it before taking any page."""
        rows = await self._waiter
        return None if self._future.has_more_pages else rows

    async def pages(self) -> AsyncIterator[list[Any]]:
        """Every page of rows; the next one is requested after this one is taken."""
        while True:
            rows = await self._waiter
            more = self._future.has_more_pages
            if more:
                self._waiter = self._loop.create_future()
                self._future.start_fetching_next_page()
            yield rows
            if not more:
                return

    async def rows(self) -> AsyncIterator[Any]:
        """Every row, page after page."""
        async for page in self.pages():
            for row in page:
                yield row

    async def all(self) -> list[Any]:
        """Every row at once (for small results only)."""
        return [row async for row in self.rows()]
