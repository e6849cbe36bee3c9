"""One day's answer asked for ahead: the request made, and the head of its answer awaited, by a thread of its
own from the moment it is asked for; its body is read by the caller, when it comes to that day.

justlog reads, unzips and parses a whole day before it sends the first byte (about a second for 50,000
lines), so a fill asks for the next day while it imports this one: the peer works on the next answer while
chatlog parses and produces this one, and the fill's rate is the slower side's, not the sum of both. The
thread only waits (the interpreter's lock released): a thread reading the body too would take the lock at
every chunk (justlog sends 2 KiB chunks) from the thread that parses, and that cost more than the reading.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from chatlog.fill.peer import ANSWER_LIMIT_S, PeerFailed, answer_lines, open_raw
from core.errors import one_line

if TYPE_CHECKING:
    import httpx


class ReadAhead:
    """``GET url`` asked in a daemon thread up to the head of its answer; :meth:`lines` gives its lines (the
    :class:`PeerFailed` the asking met, or the reading meets, where it is met); :meth:`close` closes the
    answer (one whose head has not come yet is closed when it comes)."""

    def __init__(self, http: httpx.Client, url: str, *, limit_s: float = ANSWER_LIMIT_S) -> None:
        self.url = url
        self._http = http
        self._limit_s = limit_s
        self._answer: httpx.Response | None = None
        self._failure: PeerFailed | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._open, name="chatlog-fill-ahead", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            answer = open_raw(self._http, self.url)
        except PeerFailed as exc:
            self._failure = exc
            return
        except Exception as exc:  # anything else the asking met is this answer's failure
            self._failure = PeerFailed(f"failed: {one_line(exc, 160, typed=True)}")
            return
        with self._lock:
            closed = self._closed
            if not closed:
                self._answer = answer
        if closed:
            answer.close()

    def lines(self) -> Iterator[bytes]:
        """The answer's lines, as :func:`ingest.importer.bounded_lines` reads them from its body."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        with self._lock:
            answer = None if self._closed else self._answer
        if answer is None:
            raise PeerFailed("the answer was closed before it was read")
        yield from answer_lines(answer, self._http.timeout.read or 0.0, self._limit_s)

    def close(self) -> None:
        """Close the answer (its connection, when its body was not read to the end)."""
        with self._lock:
            self._closed = True
            answer, self._answer = self._answer, None
        if answer is not None:
            answer.close()
