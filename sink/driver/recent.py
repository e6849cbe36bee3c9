"""The ids the streaming sink wrote lately, handed to the next micro-batches (``sink_dedup=writer``).

The writer tasks drop the copies of a message (:mod:`sink.executor.dedup`); a copy that arrives in a
later batch than the first one is recognised by the ids of the batches written within the window before
it. The driver keeps them here, batch by batch, and hands the next batch all of them as one blob of
16-byte ids (no Python object per id on the driver).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from sink.executor.dedup import ID_BYTES


class RecentIds:
    """The ids written by the batches of the last ``window_ms`` (batch end time), and always by the
    latest batch, whatever its age (a sink that was idle still knows the ids it wrote last)."""

    def __init__(self, window_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_ms / 1000
        self._clock = clock
        self._batches: deque[tuple[float, bytes]] = deque()

    def add(self, ids: bytes) -> None:
        """A batch was written: ``ids``, its dedup ids."""
        self._batches.append((self._clock(), ids))

    def blob(self) -> bytes:
        """Every id of the window, for the next batch."""
        oldest = self._clock() - self._window_s
        while len(self._batches) > 1 and self._batches[0][0] < oldest:
            self._batches.popleft()
        return b"".join(ids for _, ids in self._batches)

    def __len__(self) -> int:
        """Ids held."""
        return sum(len(ids) for _, ids in self._batches) // ID_BYTES
