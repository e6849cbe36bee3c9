"""Reading the IRC sockets in ticks: each connection is read at most once per interval, so the lines that
arrived meanwhile are handled (parsed, encoded, handed to the producer) as one batch.

On a busy machine the fixed cost of a read (the event loop's wake-up, the ``recv``, the callbacks, and the
caches the other processes left cold) is paid per read, not per line: read on every readiness event, an
ingester at 500 lines/s read ~2 lines a time and spent ~150 µs of CPU a line, ~12 times what the same lines
cost in one loop (``chatlog bench parse``). A connection whose read returned data is paused
(``transport.pause_reading``) until the tick's end, while the kernel's socket buffer holds what arrives;
a read that filled the transport's buffer is not paused (more is waiting). The server sees nothing of it:
TCP flow control only starts once the socket buffer is full, which at Twitch's rates and a tick of
100 ms is far away.
"""

from __future__ import annotations

import asyncio
from typing import Final, Protocol

FULL_READ_BYTES: Final = 256 * 1024
"""The size of asyncio's socket reads (``_SelectorSocketTransport.max_size``): a read this large may have
left data behind, so its connection is read again at once."""


class Held(Protocol):
    """A connection that can stop reading for the rest of a tick."""

    def hold(self) -> bool:
        """Stop reading until :meth:`release`; False when it cannot (closed, or not connected)."""
        ...

    def release(self) -> None:
        """Read again (unless the caller paused it for back-pressure meanwhile)."""
        ...


class ReadTick:
    """Holds connections that have read, and releases them all together ``interval_s`` after the first."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._held: list[Held] = []
        self._timer: asyncio.TimerHandle | None = None

    def read(self, conn: Held, nbytes: int) -> None:
        """``conn`` has just read ``nbytes``: hold it until the tick ends (unless the read filled the
        buffer)."""
        if nbytes >= FULL_READ_BYTES or not conn.hold():
            return
        self._held.append(conn)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self._release)

    def _release(self) -> None:
        held, self._held, self._timer = self._held, [], None
        for conn in held:
            conn.release()

    def close(self) -> None:
        """Release every held connection now and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
        self._release()
