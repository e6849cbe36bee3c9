"""The sink's deduplication: its two modes, which one a checkpoint runs, and the writer's ids.

Copies of a message are the same chat line read by another ingester (a replica group, a hand-off
overlap); the same message has the same id on every copy. ``sink_dedup`` picks who drops them:

- ``spark``: Spark's ``dropDuplicatesWithinWatermark`` on the message id, a stateful operator of the
  streaming query (:func:`sink.job.transform.deduplicate`);
- ``writer``: the writer tasks (:func:`sink.writer.partition.write_partition`). Every copy is keyed by its
  channel, so all copies of a message are in one Kafka partition, and one task reads each partition of a
  micro-batch whole: a copy is either in the same task as the first one, or in a later batch. So a task
  drops an event whose id it has already seen, or that the batches of the last window wrote: the driver
  keeps those (:class:`RecentIds`) and hands each batch all of them as one blob of :data:`ID_BYTES`-byte
  ids (no Python object per id on the driver). An id is the 16 bytes of the message's uuid, the
  ``message_id`` column of every table (:func:`schemas.cql.message_uuid`).

Which mode a streaming query runs is the one its checkpoint started with. Spark refuses to restart a
checkpoint whose stateful operators changed (``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``),
and the two modes differ in exactly that: ``spark`` has a deduplication operator and its state,
``writer`` has none. So a local checkpoint that has committed batches keeps its mode, whatever the
setting says (with a warning, :func:`effective_mode`); a remote one (``hdfs://``, ``s3a://``...) is not
looked into, and a mismatch fails in one line (:func:`mismatch_message`).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from schemas.cql import message_uuid
from sink.settings import local_checkpoint

if TYPE_CHECKING:
    from sink.settings import SinkSettings

log = logging.getLogger(__name__)

# -- the writer's ids ------------------------------------------------------------------------------------

ID_BYTES = 16


def id_of(message_id: str) -> bytes:
    """The dedup id of a message id: its row uuid's bytes."""
    return message_uuid(message_id).bytes


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


# -- which mode a streaming checkpoint runs --------------------------------------------------------------

Mode = Literal["writer", "spark"]
MISMATCH = "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"


def _local_path(location: str) -> Path:
    return Path(location.removeprefix("file://").removeprefix("file:"))


def checkpoint_mode(location: str) -> Mode | None:
    """The mode a local checkpoint started with: ``spark`` when it holds dedup state, ``writer`` when it
    committed batches without any; None when it committed none or is not local."""
    if not local_checkpoint(location):
        return None
    root = _local_path(location)
    if (root / "state").is_dir():
        return "spark"
    commits = root / "commits"
    if commits.is_dir() and any(not p.name.startswith(".") for p in commits.iterdir()):
        return "writer"
    return None


def effective_mode(settings: SinkSettings) -> Mode:
    """``sink_dedup``, unless the checkpoint started with the other mode: then that one, with a warning."""
    found = checkpoint_mode(settings.checkpoint_location)
    if found is None or found == settings.sink_dedup:
        return settings.sink_dedup
    log.warning(
        "checkpoint %s was started with sink_dedup=%s: keeping it (CHATLOG_SINK_DEDUP=%s applies to a new "
        "checkpoint, CHATLOG_SINK_CHECKPOINT)",
        settings.checkpoint_location,
        found,
        settings.sink_dedup,
    )
    return found


def mismatch_message(text: str, settings: SinkSettings) -> str | None:
    """One line for Spark's refusal of a checkpoint started with the other mode; None for other errors."""
    if MISMATCH not in text:
        return None
    return (
        f"checkpoint {settings.checkpoint_location} was started with the other dedup mode than "
        f"CHATLOG_SINK_DEDUP={settings.sink_dedup}: set it back, or start a new checkpoint "
        "(CHATLOG_SINK_CHECKPOINT)"
    )
