"""A double of a cassandra-driver ``Session``: the calls the project makes of one (``prepare``, ``execute``,
``execute_async`` and the ``ResponseFuture`` it returns), in process, without Cassandra.

It records every statement prepared and sent (:attr:`FakeSession.prepared`, :attr:`FakeSession.executed`,
:attr:`FakeSession.attempts`), answers each with canned rows (a callable given to it, or
:func:`rows_by_table` for the common "table -> partition key -> rows"), and fails a statement on demand (a
callable that returns the exception to raise, given each call and how often that statement was sent).

A prepared statement is its CQL text, so a test can compare what was executed with the query it expects.
As the driver does, ``execute_async`` completes its future on another thread (``threaded=False``: at once,
on the caller's thread); rows come in pages of ``page_size`` when one is given.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any


@dataclass(frozen=True)
class Call:
    """One statement sent to the session: what, with which values, and its how-manieth sending (1 first)."""

    statement: Any
    params: tuple[Any, ...]
    attempt: int
    kwargs: Mapping[str, Any]


Answer = Callable[[Call], Iterable[Any]]
"""The rows a call returns."""
Failure = Callable[[Call], BaseException | None]
"""The exception a call fails with, or ``None`` for success."""


def no_rows(call: Call) -> list[Any]:
    """Every statement answers no row (a write, or an empty table)."""
    del call
    return []


def never_fails(call: Call) -> None:
    """Every statement succeeds."""
    del call


def rows_by_table(tables: Mapping[str, Mapping[Any, Sequence[Mapping[str, Any]]]]) -> Answer:
    """Answers a ``SELECT ... FROM [keyspace.]table ...`` from ``tables`` (table -> first bound value,
    the partition key -> rows as dicts); each row comes back with its columns as attributes, as the
    driver's named tuples have them. An unknown table or key has no rows."""

    def answer(call: Call) -> list[Any]:
        table = table_of(str(call.statement))
        key = call.params[0] if call.params else None
        return [SimpleNamespace(**row) for row in tables.get(table, {}).get(key, [])]

    return answer


def table_of(cql: str) -> str:
    """The table a statement reads (``FROM``), writes (``INTO``, ``UPDATE``) or deletes from, without its
    keyspace; ``""`` if it names none."""
    words = cql.replace("(", " ").split()
    upper = [w.upper() for w in words]
    for keyword in ("FROM", "INTO", "UPDATE"):
        if keyword in upper[:-1]:
            return words[upper.index(keyword) + 1].rsplit(".", 1)[-1]
    return ""


def reads(session: FakeSession) -> list[tuple[str, Any]]:
    """The table and the first bound value (the partition key) of each statement ``session`` was sent."""
    return [
        (table_of(str(call.statement)), call.params[0] if call.params else None) for call in session.executed
    ]


_Callbacks = tuple[Callable[..., Any], tuple[Any, ...], Callable[..., Any], tuple[Any, ...]]
"""A callback, its extra arguments, an errback and its extra arguments."""


class FakeResponseFuture:
    """A ``ResponseFuture``: rows in pages, or an error, handed to the callbacks added to it."""

    def __init__(self, pages: list[list[Any]], error: BaseException | None, *, threaded: bool) -> None:
        self._pages = pages
        self._page = 0
        self._error = error
        self._threaded = threaded
        self._callbacks: list[_Callbacks] = []

    @property
    def has_more_pages(self) -> bool:
        return self._error is None and self._page + 1 < len(self._pages)

    def add_callbacks(
        self,
        callback: Callable[..., Any],
        errback: Callable[..., Any],
        callback_args: tuple[Any, ...] = (),
        errback_args: tuple[Any, ...] = (),
    ) -> None:
        """Calls ``callback(rows, *callback_args)`` with the current page, or
        ``errback(exc, *errback_args)``."""
        added = (callback, callback_args, errback, errback_args)
        self._callbacks.append(added)
        self._deliver([added])

    def start_fetching_next_page(self) -> None:
        if not self.has_more_pages:
            raise RuntimeError("no more pages")
        self._page += 1
        self._deliver(self._callbacks)

    def result(self) -> list[Any]:
        """The current page, or the error raised."""
        if self._error is not None:
            raise self._error
        return list(self._pages[self._page])

    def _deliver(self, to: list[_Callbacks]) -> None:
        page = self._pages[self._page]
        callbacks = list(to)

        def run() -> None:
            for callback, callback_args, errback, errback_args in callbacks:
                if self._error is not None:
                    errback(self._error, *errback_args)
                else:
                    callback(list(page), *callback_args)

        if self._threaded:
            threading.Thread(target=run, daemon=True).start()
        else:
            run()


class FakeSession:
    """A cassandra-driver ``Session`` that records what it is sent and answers from ``answer``.

    ``fail`` decides, for each call, whether it fails and with what; :attr:`attempts` counts the sendings
    of each statement, so ``fail`` can fail a statement its first *n* times (:func:`fails_first`).
    """

    def __init__(
        self,
        answer: Answer = no_rows,
        *,
        fail: Failure = never_fails,
        threaded: bool = True,
        page_size: int | None = None,
    ) -> None:
        self.answer = answer
        self.fail = fail
        self.threaded = threaded
        self.page_size = page_size
        self.prepared: list[str] = []
        self.executed: list[Call] = []
        self.attempts: Counter[Hashable] = Counter()
        self._lock = threading.Lock()

    def prepare(self, query: str) -> str:
        """The statement is its CQL text."""
        with self._lock:
            self.prepared.append(query)
        return query

    def execute(self, statement: Any, parameters: Sequence[Any] = (), **kwargs: Any) -> list[Any]:
        call = self._record(statement, parameters, kwargs)
        error = self.fail(call)
        if error is not None:
            raise error
        return list(self.answer(call))

    def execute_async(
        self, statement: Any, parameters: Sequence[Any] = (), **kwargs: Any
    ) -> FakeResponseFuture:
        call = self._record(statement, parameters, kwargs)
        error = self.fail(call)
        rows = [] if error is not None else list(self.answer(call))
        size = self.page_size or max(len(rows), 1)
        pages = [rows[i : i + size] for i in range(0, len(rows), size)] or [[]]
        return FakeResponseFuture(pages, error, threaded=self.threaded)

    @property
    def statements(self) -> list[Any]:
        """The statements sent, in order."""
        return [call.statement for call in self.executed]

    def _record(self, statement: Any, parameters: Sequence[Any], kwargs: Mapping[str, Any]) -> Call:
        with self._lock:
            self.attempts[statement] += 1
            call = Call(statement, tuple(parameters or ()), self.attempts[statement], dict(kwargs))
            self.executed.append(call)
        return call


def fails_first(times: int, error: Callable[[], BaseException]) -> Failure:
    """Fails each statement its first ``times`` sendings with a new ``error()``, then lets it succeed."""

    def fail(call: Call) -> BaseException | None:
        return error() if call.attempt <= times else None

    return fail
