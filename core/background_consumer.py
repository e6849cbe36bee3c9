"""A Kafka consumer polled in a daemon thread of its own, until told to stop.

:class:`BackgroundConsumer` owns the life every such reader of the project shares (an ingester's coverage
watch and group membership, the opt-out registry of every process, the sink's coverage ledger, the live hub
of ``chatlog serve``): starting the thread, the poll loop, stopping it, joining it, and what ends the loop.
A stop ends it after the poll under way. An exception ends it too: it is kept in ``failure`` and handed to
the subclass to tell; then the thread ends, or, for a consumer with a ``retry_s``, it waits that long (a
stop cuts the wait short) and opens the consumer again. The consumer is closed whenever the loop ends; a
failure to close is logged, never raised. Logs go to the logger of the subclass's module.

A subclass keeps what is its own: how its consumer is opened (made and positioned on the thread, or made
before and handed over), what one poll does with the records, how a failure is told, and what is done once
the thread is over (a ready event set, subscribers ended).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    """What the loop itself asks of a consumer; the polling is the subclass's."""

    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class BackgroundConsumer(ABC, Generic[C]):
    """A consumer polled in a daemon thread named ``thread_name`` until :meth:`stop` (see the module doc).

    ``what`` names the consumer in the log (``closing the <what>: ...``). ``retry_s``: after a failure, wait
    this long and open the consumer again; None: a failure ends the thread."""

    def __init__(self, thread_name: str, what: str, *, retry_s: float | None = None) -> None:
        self._thread_name = thread_name
        self._what = what
        self._retry_s = retry_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._log = logging.getLogger(type(self).__module__)
        self.failure: Exception | None = None
        """The exception that last ended the loop (one with a ``retry_s`` opens it again); None while none
        has."""

    # -- life -------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread (returns at once); nothing while it runs. One that ended may be started again;
        after :meth:`stop`, a new thread ends at once."""
        if self.alive:
            return
        self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the loop after the poll under way (or at once, in a retry's wait). Final."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` seconds for the thread to end; nothing on the thread itself (a callback it
        runs may close what it runs in)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()

    # -- the thread -------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                consumer: C | None = None
                try:
                    consumer = self._open()
                    while not self._stop.is_set():
                        self._poll(consumer)
                except Exception as exc:
                    self.failure = exc
                    self._failed(exc)
                    if self._retry_s is None:
                        break
                    self._stop.wait(self._retry_s)
                finally:
                    if consumer is not None:
                        self._close(consumer)
        finally:
            self._ended()

    @abstractmethod
    def _open(self) -> C:
        """The consumer, ready to poll (on the thread, at the start and after each failure's wait). One made
        here and not returned (positioning failed) is closed here."""

    @abstractmethod
    def _poll(self, consumer: C) -> None:
        """One poll and what is done with what it took; its timeout bounds how soon a stop is seen."""

    @abstractmethod
    def _failed(self, exc: Exception) -> None:
        """Tell the exception that ended the loop (called inside the ``except``: ``log.exception`` works)."""

    def _close(self, consumer: C) -> None:
        """Close the consumer the loop ended with; a failure to close is logged, never raised."""
        try:
            consumer.close()
        except Exception as exc:
            self._log.warning("closing the %s: %s", self._what, exc)

    def _ended(self) -> None:
        """What is done once the thread is over (after the consumer was closed), however it ended."""
