"""One day's answer read ahead: the request made, and its body read into a bounded queue, by a thread of its
own from the moment it is asked for. A fill asks for the next day while it imports this one, so the peer
works on the next answer (justlog reads and unzips its file) while chatlog parses and produces this one:
the fill's rate is the slower side's, not the sum of both."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from chatlog.fill.peer import ANSWER_LIMIT_S, PeerFailed, raw_chunks
from core.errors import one_line
from ingest.importer import bounded_lines

if TYPE_CHECKING:
    import httpx

QUEUE_CHUNKS: Final = 256
"""Chunks held ahead at most (httpx gives up to 64 KiB at a time: 16 MiB)."""
_END: Final = b""


class ReadAhead:
    """``GET url`` read in a daemon thread into a queue of at most :data:`QUEUE_CHUNKS` chunks; :meth:`lines`
    gives its lines (raising the :class:`PeerFailed` the reading met, where it met it), :meth:`close` stops
    the reading."""

    def __init__(self, http: httpx.Client, url: str, *, limit_s: float = ANSWER_LIMIT_S) -> None:
        self.url = url
        self._queue: queue.Queue[bytes | PeerFailed] = queue.Queue(maxsize=QUEUE_CHUNKS)
        self._closed = threading.Event()
        self._ended = False
        self._thread = threading.Thread(
            target=self._read, args=(http, limit_s), name="chatlog-fill-ahead", daemon=True
        )
        self._thread.start()

    def _read(self, http: httpx.Client, limit_s: float) -> None:
        try:
            for chunk in raw_chunks(http, self.url, limit_s):
                if not self._put(chunk):
                    return
            self._put(_END)
        except PeerFailed as exc:
            self._put(exc)
        except Exception as exc:  # anything else the reading met is this answer's failure
            self._put(PeerFailed(f"failed: {one_line(exc, 160, typed=True)}"))

    def _put(self, item: bytes | PeerFailed) -> bool:
        """Queue ``item`` unless closed first (False)."""
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def read1(self, size: int = -1, /) -> bytes:
        """The next chunk (``b""`` at the end), as :func:`ingest.importer.bounded_lines` reads."""
        del size
        if self._ended:
            return _END
        item = self._queue.get()
        if isinstance(item, PeerFailed):
            self._ended = True
            raise item
        self._ended = item == _END
        return item

    def lines(self) -> Iterator[bytes]:
        return bounded_lines(self)

    def close(self) -> None:
        """Stop reading (the thread ends at its next chunk; the connection goes back or is closed)."""
        self._closed.set()
