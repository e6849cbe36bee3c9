"""The two tasks of a backfill: records into framed lines keyed by partition (:func:`frame_task`), and, once
Spark has sorted them by partition and line order, the lines into whole blocks (:func:`block_task`).

A backfill writes periods whole: a channel's day (by hours) and a user's month as few large blocks, framed at
:data:`store.frame.PACKED_LEVEL`, so a keyspace loaded from the past (an import, a rebuild) is as small and as
fast to read as a packed one, with nothing for ``chatlog pack`` to do. Both tasks exchange Arrow batches with
Spark (``mapInArrow``): the first gets the deduplicated records (``value``, ``partition``, ``offset``) and
gives one row per copy of each event (its channel's and, filed under a user, the user's): ``kind`` (0:
channel, 1: user, -1: the task's counts), ``key`` (the partition's key, its parts joined by ``\\x1f``),
``order`` (the line's place, :func:`order_bytes`) and ``line`` (the framed line, msgpack); the second gets
them sorted by (kind, key, order) and gives the counts of what it wrote. Invalid records become dead letters,
the events of opt-outs are dropped, and the name history is written, in the first task; a copy of a line in
two blocks cannot happen (the records were deduplicated exactly).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import msgspec

from store.blocks import CHANNEL, USER, Cutter, Framed, framed
from store.keys import channel_part, day_of, line_order, month_of, user_part

if TYPE_CHECKING:
    import pyarrow as pa

    from consent.rule import OptOutSet
    from sink.settings import SinkSettings

LINES_SCHEMA: Final = "kind int, key string, order binary, line binary"
STATS_SCHEMA: Final = "stats string"
SEP: Final = "\x1f"
_LineType = tuple[int, bytes, str, int | None, tuple[str, str | None, str, bool, bool] | None, str | None]


def order_bytes(sent_ms: int, message_id: bytes) -> bytes:
    """A line's place (:func:`store.keys.line_order`) as bytes that sort the same way."""
    sent, version, n, t = line_order(sent_ms, message_id)
    return (
        (sent + (1 << 63)).to_bytes(8, "big")
        + bytes((version,))
        + n.to_bytes(16, "big")
        + t.to_bytes(8, "big")
    )


def _stats_row(stats: dict[str, Any]) -> tuple[int, str, bytes, bytes]:
    return -1, "", b"", json.dumps(stats).encode()


def frame_task(settings: SinkSettings, dead_letters: bool, optouts: OptOutSet | None) -> Any:
    """The first task (module doc)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from sink.writer.collaborators import production
        from sink.writer.partition import decoded, opted_out
        from sink.writer.stats import WriteStats

        schema = pa.schema(
            [("kind", pa.int32()), ("key", pa.string()), ("order", pa.binary()), ("line", pa.binary())]
        )
        encode = msgspec.msgpack.Encoder().encode  # made in the task: a closure's globals are pickled
        wiring = production(settings, dead_letters=dead_letters)
        names = wiring.storage()
        stats = WriteStats()
        letters = wiring.dead_letters
        topic = settings.topic_messages

        def dead_letter(record: Any, reason: str) -> None:
            value, partition, offset = record
            stats.deadletters += 1
            if letters is not None:
                letters.send(None if value is None else bytes(value), reason, f"{topic}/{partition}/{offset}")

        for batch in batches:
            kinds: list[int] = []
            keys: list[str] = []
            orders: list[bytes] = []
            lines: list[bytes] = []
            columns = batch.to_pydict()
            for record in zip(columns["value"], columns["partition"], columns["offset"], strict=True):
                event = decoded(record, dead_letter)
                if event is None or opted_out(event, optouts, stats):
                    continue
                try:
                    item = framed(event)
                    names.add_names(event)
                except ValueError as exc:
                    dead_letter(record, f"cannot be written to Cassandra: {exc}")
                    continue
                stats.events += 1
                line = item.line
                order = order_bytes(line[0], line[1])
                payload = encode(line)
                kinds.append(0)
                keys.append(f"{item.channel_key}{SEP}{day_of(line[0])}")
                orders.append(order)
                lines.append(payload)
                if item.user_key is not None:
                    kinds.append(1)
                    keys.append(f"{item.channel_key}{SEP}{item.user_key}{SEP}{month_of(line[0])}")
                    orders.append(order)
                    lines.append(payload)
            if kinds:
                yield pa.RecordBatch.from_pydict(
                    {"kind": kinds, "key": keys, "order": orders, "line": lines}, schema=schema
                )
        written = names.finish()
        stats.rows.update(written.rows)
        if letters is not None and stats.deadletters:
            letters.flush()
        row = _stats_row(stats.to_dict() | {"written_ids": ""})
        yield pa.RecordBatch.from_pydict(
            {"kind": [row[0]], "key": [row[1]], "order": [row[2]], "line": [row[3]]}, schema=schema
        )

    return task


def _period(kind: int, key: str) -> tuple[Any, ...]:
    parts = key.split(SEP)
    if kind == 0:
        return parts[0], int(parts[1])
    return parts[0], parts[1], int(parts[2])


def block_task(settings: SinkSettings) -> Any:
    """The second task (module doc): sorted lines into blocks, written as they complete."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from sink.writer.collaborators import write_options
        from store import frame
        from store.write import TaskWrite, WriteOptions, worker_session

        decode = msgspec.msgpack.Decoder(_LineType).decode
        options: WriteOptions = write_options(settings)
        options = WriteOptions(**{**options.__dict__, "level": frame.PACKED_LEVEL})
        session = worker_session(settings, settings.sink_cassandra_retry_s, settings.sink_cassandra_timeout_s)
        writer = TaskWrite(session, options)
        cutters = {0: Cutter(CHANNEL, channel_part), 1: Cutter(USER, user_part)}
        pending = 0
        counts: list[str] = []
        for batch in batches:
            columns = batch.to_pydict()
            for kind, key, line in zip(columns["kind"], columns["key"], columns["line"], strict=True):
                if kind < 0:
                    counts.append(line.decode())
                    continue
                decoded = decode(line)
                item = Framed(decoded, "", decoded[5], (0, 0, 0, 0))
                done = cutters[kind].add(_period(kind, key), item)
                if done:
                    writer.add_blocks(done)
                    pending += len(done)
                    if pending >= 200:
                        writer.finish()
                        pending = 0
        for cutter in cutters.values():
            writer.add_blocks(cutter.close())
        written = writer.finish()
        counts.append(json.dumps({"blocks": written.rows}))
        yield pa.RecordBatch.from_pydict({"stats": counts})

    return task
