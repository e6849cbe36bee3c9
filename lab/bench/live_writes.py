"""A tree's lines written the way the streaming sink writes the present (``chatlog bench vs-justlog``'s
current case).

The lines, in send-time order, are cut into micro-batches of the sink's trigger interval
(``CHATLOG_SINK_TRIGGER``), and each micro-batch is written by the sink's own writer
(:func:`sink.writer.partition.write_partition`, as a Spark task calls it, ids deduplicated within the batch):
so every micro-batch becomes one block in the channel's day and one in each user's month it holds lines of,
framed at the live level, with the index and name rows the sink writes. A real sink's micro-batch holds what
arrived during the interval; here a line arrives when it was sent. The micro-batches are written by a few
processes at once (each as one Spark Python worker writes its tasks), so a month of them takes minutes.
"""

from __future__ import annotations

import gzip
import multiprocessing
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from core.irc_parse import parse_line
from core.times import now_ms
from schemas.chat_event import encode

if TYPE_CHECKING:
    from lab.bench.justlog_tree import Tree
    from sink.settings import SinkSettings

PROCESSES: Final = 12
"""Writing processes: each waits on Cassandra for most of a micro-batch (a few requests of a few rows), so
more of them than cores keep it busy."""
_CHUNK: Final = 256
"""Micro-batches handed to a process at a time."""


def micro_batches(lines: Iterable[str], trigger_ms: int) -> Iterator[list[bytes]]:
    """The chat events of ``lines`` (in send-time order) as the encoded values of each ``trigger_ms`` of
    send time that holds any; a line's receive time is its send time."""
    batch: list[bytes] = []
    window: int | None = None
    now = now_ms()  # the parser takes no send time later than the receive time
    for line in lines:
        event = parse_line(line, received_at=now)
        if event is None:
            continue
        event.received_at = event.sent_at
        this = event.sent_at // trigger_ms
        if this != window and batch:
            yield batch
            batch = []
        window = this
        batch.append(encode(event))
    if batch:
        yield batch


def tree_lines(tree: Tree) -> Iterator[str]:
    """The channel's lines of every day of ``tree``, in order (a day's file plain or gzipped by justlog)."""
    from lab.bench.justlog_tree import channel_file

    for day in tree.days:
        path = channel_file(tree.root, tree.channel_id, tree.year, tree.month, day)
        gz = Path(f"{path}.gz")
        with gzip.open(gz, "rt", encoding="utf-8") if gz.exists() else path.open(encoding="utf-8") as lines:
            for line in lines:
                yield line.rstrip("\n")


Chunk = tuple["SinkSettings", list[list[bytes]]]
"""The settings of the keyspace and some micro-batches' values: what one call of a writing process takes."""


def _write(args: Chunk) -> dict[str, Any]:
    from sink.writer.partition import write_partition
    from sink.writer.stats import WriteStats

    settings, batches = args
    total = WriteStats()
    for values in batches:
        records = ((value, 0, offset) for offset, value in enumerate(values))
        total.add(write_partition(records, settings, recent=b""))
        total.written_ids = b""  # the ids a streaming batch hands to the next: not needed here
    return total.to_dict()


def _chunks(batches: Iterator[list[bytes]], settings: SinkSettings) -> Iterator[Chunk]:
    chunk: list[list[bytes]] = []
    for batch in batches:
        chunk.append(batch)
        if len(chunk) == _CHUNK:
            yield settings, chunk
            chunk = []
    if chunk:
        yield settings, chunk


def write_live(settings: SinkSettings, tree: Tree, processes: int = PROCESSES) -> dict[str, Any]:
    """Write ``tree``'s lines into the keyspace of ``settings`` as the streaming sink writes them; what was
    written (micro-batches, events, rows per table, dead letters) and how long it took."""
    from sink.job.stream import ensure_schema

    ensure_schema(settings)
    trigger_ms = settings.trigger_ms
    counted = {"micro_batches": 0, "events": 0}

    def counting() -> Iterator[list[bytes]]:
        for batch in micro_batches(tree_lines(tree), trigger_ms):
            counted["micro_batches"] += 1
            counted["events"] += len(batch)
            yield batch

    start = time.perf_counter()
    totals: dict[str, Any] = {}
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        for stats in pool.imap_unordered(_write, _chunks(counting(), settings)):
            for key, value in stats.items():
                if isinstance(value, dict):
                    into = totals.setdefault(key, {})
                    for name, count in value.items():
                        into[name] = into.get(name, 0) + count
                elif isinstance(value, int | float):
                    totals[key] = totals.get(key, 0) + value
    return {
        "trigger_ms": trigger_ms,
        **counted,
        "written": totals,
        "seconds": round(time.perf_counter() - start, 1),
    }
