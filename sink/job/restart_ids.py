"""The dedup ids a restarted sink starts with: those the batches before its checkpoint's last commit wrote.

A sink killed mid-batch re-runs that batch when it starts again (Spark replays its logged offsets). Its
:class:`sink.dedup.RecentIds` lived in the driver and is gone: without it, a copy of a message whose first
copy an earlier batch wrote would be written again, into another block (read once, but stored twice). So on
start the sink reads back, from Kafka, the records of the checkpoint's committed batches of the last
``sink_dedup_window`` and a trigger interval (by their commit times, as the driver kept them) and hands their
ids to the first batch as the ids already written: the re-run batch drops the same copies the killed run
dropped.

Only valid records count (a dead letter wrote nothing). A checkpoint that is not a local directory, or has
no committed batch, seeds nothing.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

from confluent_kafka import Consumer, TopicPartition

from core.errors import one_line
from schemas.chat_event import InvalidEvent, decode
from sink.dedup import id_of
from sink.settings import SinkSettings

log = logging.getLogger(__name__)


def _local(location: str) -> Path | None:
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else location)
    return None


def _ends(root: Path, batch: int, topic: str) -> dict[int, int]:
    lines = (root / "offsets" / str(batch)).read_text().splitlines()
    return {int(p): int(o) for p, o in json.loads(lines[2])[topic].items()}


def window_offsets(checkpoint: str, topic: str, window_s: float) -> dict[int, tuple[int, int]] | None:
    """``{partition: (start, end)}``: the offsets of ``topic`` that the checkpoint's committed batches of the
    last ``window_s`` (by their commit times, as :class:`sink.dedup.RecentIds` keeps batches; the last one
    always) read; None where there is no committed batch, the checkpoint is not a local directory, or its
    log is not one this reads."""
    root = _local(checkpoint)
    if root is None or not (root / "commits").is_dir():
        return None
    commits = sorted(
        (int(p.name), p.stat().st_mtime) for p in (root / "commits").iterdir() if p.name.isdigit()
    )
    if not commits:
        return None
    last, last_at = commits[-1]
    first = min(batch for batch, at in commits if at >= last_at - window_s or batch == last)
    try:
        ends = _ends(root, last, topic)
        starts = _ends(root, first - 1, topic) if first > 0 else {}
    except (OSError, IndexError, KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("the checkpoint's offsets are not readable (%s): no dedup ids seeded", one_line(exc))
        return None
    return {p: (starts.get(p, 0), end) for p, end in ends.items() if end > starts.get(p, 0)}


def restart_ids(settings: SinkSettings, timeout_s: float = 30.0) -> bytes:
    """The dedup ids (as :meth:`sink.dedup.RecentIds.add` takes them) of the valid records of the window
    before the checkpoint's last committed batch ends; empty for a fresh checkpoint."""
    ranges = window_offsets(
        settings.checkpoint_location, settings.topic_messages, settings.dedup_retention_ms / 1000
    )
    if not ranges:
        return b""
    ends = {p: end for p, (_start, end) in ranges.items()}
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": f"chatlog-sink-restart-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        assign = [TopicPartition(settings.topic_messages, p, start) for p, (start, _end) in ranges.items()]
        if not assign:
            return b""
        consumer.assign(assign)
        left = {tp.partition for tp in assign}
        ids: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                partition, offset = msg.partition(), msg.offset()
                if partition not in left or partition is None:
                    continue
                if msg.error() is not None or offset is None or offset >= ends[partition]:
                    left.discard(partition)  # the end of the partition, or past the batch
                    continue
                try:
                    ids.append(id_of(decode(msg.value() or b"").message_id))
                except (InvalidEvent, ValueError):
                    continue
                if offset + 1 >= ends[partition]:
                    left.discard(partition)
        log.info("restart: %d ids of the batches before the checkpoint's last commit seeded", len(ids))
        return b"".join(ids)
    finally:
        consumer.close()
