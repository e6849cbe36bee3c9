"""The writer's deduplication (``sink_dedup=writer``): which events of a task are copies.

Copies of a message are the same chat line read by another ingester (a replica group, a hand-off
overlap). Every copy is keyed by its channel, so all copies of a message are in one Kafka partition, and
one task reads each partition of a micro-batch whole: a copy is either in the same task as the first
one, or in a later batch. So a task drops an event whose id it has already seen, or that the batches of
the last window wrote (:class:`sink.driver.recent.RecentIds` hands them over). An id is the 16 bytes of
the message's uuid, the ``message_id`` column of every table (:func:`schemas.cql.message_uuid`).
"""

from __future__ import annotations

from schemas.cql import message_uuid

ID_BYTES = 16


def id_of(message_id: str) -> bytes:
    """The dedup id of a message id: its row uuid's bytes."""
    return message_uuid(message_id).bytes


def id_set(ids: bytes) -> set[bytes]:
    """The ids of a blob of :data:`ID_BYTES`-byte ids (as :class:`sink.driver.recent.RecentIds` gives)."""
    if len(ids) % ID_BYTES:
        raise ValueError(f"a blob of ids has a multiple of {ID_BYTES} bytes, not {len(ids)}")
    return {ids[i : i + ID_BYTES] for i in range(0, len(ids), ID_BYTES)}
