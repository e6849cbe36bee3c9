"""The sink's deduplication of copies: the ids the last micro-batches wrote, handed to the next.

Copies of a message are the same chat line read by another ingester (the other replica group, a hand-off
overlap); every copy has the message's id. The writer tasks drop them (:mod:`sink.writer.partition`):
every copy is keyed by its channel, so all copies of a message are in one Kafka partition, and one task
reads each partition of a micro-batch whole; a copy is either in the same task as the first one, or in a
later batch. So a task drops an event whose id it has seen, or that the batches of the last
``sink_dedup_window`` and a trigger interval wrote (a copy that reaches Kafka up to the window after the first
is read by the first batch after it, up to a trigger later): the driver keeps those (:class:`RecentIds`) and
hands each batch all of them as one blob of :data:`ID_BYTES`-byte ids (no Python object per id on the driver).
An id is the 16 bytes of the message's uuid (:func:`store.keys.message_id_bytes`). A copy later than the
window is written again, into another block, and read once (store/read.py drops a line it has read); ``chatlog
pack`` keeps one.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from store.keys import message_id_bytes

ID_BYTES = 16


def id_of(message_id: str) -> bytes:
    """The dedup id of a message id: its uuid's bytes."""
    return message_id_bytes(message_id)


def id_set(ids: bytes) -> set[bytes]:
    """The ids of a blob of :data:`ID_BYTES`-byte ids (as :meth:`RecentIds.blob` gives)."""
    if len(ids) % ID_BYTES:
        raise ValueError(f"a blob of ids has a multiple of {ID_BYTES} bytes, not {len(ids)}")
    return {ids[i : i + ID_BYTES] for i in range(0, len(ids), ID_BYTES)}


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
