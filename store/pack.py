"""``chatlog pack``: a period's blocks packed into one (or a few, at the block bounds), and the blocks it
replaces deleted.

The sink writes a block per partition per micro-batch: a channel's day is thousands of small blocks, each
framed on its own and read one by one, a user's month hundreds of one line each. Once the period is over (a
channel's day, a user's month, plus ``settle_s``) its lines no longer change but for late writes (a
backfill, a replay), so this packs them: per
partition (a day's or month's part) holding more than one block, in one single-partition batch (atomic and
isolated in Cassandra), the lines of every block merged (each once) into blocks framed at
:data:`store.frame.PACKED_LEVEL`, and ``DELETE ... USING TIMESTAMP t`` of each block they replace, ``t`` the
block's own write time: a block written again after the read (a replay) is newer and stays, and the next run
packs it in (a reader drops a line it has read already). A partition written within ``settle_s`` is left for
a later run. Running it again packs nothing twice: a partition of one block is left as it is.

A period not over yet (today's day of a channel, this month of a user: what moderators and chat clients read
most) is packed up to ``settle_s`` ago: the blocks whose lines were all sent before then (their ``last_at``)
are packed the same way, the newer ones left to the sink; the next run packs in what came since. A channel's
day is cut at each hour, so its past hours are framed once; a user's month is one block, framed again with
what each run adds.

The rows a packed block replaces are deleted, so they leave the disk when Cassandra compacts the SSTables
that hold them with the tombstones (docs/storage.md, "Packing").

:func:`rewrite` is the same rewrite with a filter: what erasure does to a channel's blocks that hold an
erased user's lines (:mod:`store.erase`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, cast

from core.times import now_ms as current_ms
from store import frame
from store.blocks import (
    CHANNEL,
    CHANNEL_SPAN_MS,
    MAX_BLOCK_LINES,
    USER,
    Block,
    Framed,
    Table,
    block_of,
    run_id,
    runs_of,
)
from store.keys import DAY_MS, line_order, month_end_ms, month_start_ms
from store.requests import with_retry
from store.write import BLOCK_TABLES, block_statement

_PARTITION_COLUMNS: Final[dict[Table, tuple[str, ...]]] = {
    CHANNEL: ("channel_key", "day", "part"),
    USER: ("channel_key", "user_key", "month", "part"),
}
_INDEXES: Final[dict[Table, str]] = {CHANNEL: "channel_days", USER: "user_months"}
MAX_BATCH_STATEMENTS: Final = 5_000
"""Most statements in one rewrite batch. A partition of more blocks (a month of a user who spoke in most
micro-batches: 65,535 statements is the protocol's limit) is rewritten in several single-partition batches,
the new blocks in the first: between them a read finds a line in a new block and in an old one, and gives it
once."""
WRITES: Final = threading.Semaphore(1)
"""One rewrite of a partition in flight per process. A rewrite is one batch of up to megabytes; the driver
does not queue a request while the connection's socket is full, it fails it (``ConnectionBusy``): eight
concurrent 3 MB batches here, 32 of 40 refused at once. Reads stay concurrent."""


@dataclass
class PackReport:
    """What a run packed."""

    partitions: int = 0
    packed: int = 0
    """Partitions packed."""
    blocks_before: int = 0
    blocks_after: int = 0
    lines: int = 0
    skipped_recent: int = 0
    """Partitions written within the settle time (left for a later run)."""
    open_partitions: int = 0
    """Partitions of periods not over yet (packed up to the settle time)."""
    open_packed: int = 0
    by_table: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"pack: {self.packed} of {self.partitions} closed partition(s) and {self.open_packed} of "
            f"{self.open_partitions} open one(s) packed ({self.blocks_before} block(s) -> "
            f"{self.blocks_after}, {self.lines} line(s)); {self.skipped_recent} written within the settle "
            "time left for a later run"
        )


class Blocks:
    """The statements that read, write and delete one table's blocks by partition."""

    def __init__(self, session: Any, keyspace: str, table: Table) -> None:
        name = BLOCK_TABLES[table]
        where = " AND ".join(f"{c} = ?" for c in _PARTITION_COLUMNS[table])
        self.table = table
        self.session = session
        rows = (
            "SELECT toUnixTimestamp(first_at) AS first_ms, block, frame, writetime(frame) AS written, "
            f"ttl(frame) AS ttl, toUnixTimestamp(last_at) AS last_ms FROM {keyspace}.{name} WHERE {where}"
        )
        self.read = session.prepare(rows)
        self.read.fetch_size = 200
        self.read_until = session.prepare(f"{rows} AND first_at <= ?")
        self.read_until.fetch_size = 200
        self.heads = session.prepare(
            f"SELECT toUnixTimestamp(first_at) AS first_ms, block, writetime(lines) AS written, "
            f"toUnixTimestamp(last_at) AS last_ms, lines FROM {keyspace}.{name} WHERE {where}"
        )
        self.heads.fetch_size = 5_000
        self.delete = session.prepare(
            f"DELETE FROM {keyspace}.{name} USING TIMESTAMP ? WHERE {where} AND first_at = ? AND block = ?"
        )
        self.delete_index = session.prepare(
            f"DELETE FROM {keyspace}.{_INDEXES[table]} USING TIMESTAMP ? WHERE "
            + " AND ".join(f"{c} = ?" for c in _index_columns(table))
        )
        self.write: Any = None  # the prepared inserts (store.write.Prepared), set by the caller


def _index_columns(table: Table) -> tuple[str, ...]:
    return (
        ("channel_key", "day", "part") if table == CHANNEL else ("channel_key", "user_key", "month", "part")
    )


Head = tuple[int, Any, int, int, int]
"""A block's row without its frame: ``(first_ms, block id, write time µs, last_ms, lines)``."""


def heads(blocks: Blocks, key: tuple[Any, ...]) -> list[Head]:
    rows = blocks.session.execute(blocks.heads, key, timeout=60)
    return [(r.first_ms, r.block, r.written, r.last_ms, r.lines) for r in rows]


def mergeable(table: Table, found: Sequence[Head]) -> bool:
    """Whether packing these blocks of one partition can change them, from their rows alone: two blocks in
    one hour of a channel's day (a packed day is cut at each hour, and within one only at a block's size),
    or a user's month in more blocks than its lines need. Blocks cut at their size (a few huge hours) look
    mergeable, and are read to find them packed already."""
    if len(found) < 2:
        return False
    if table == CHANNEL:
        hours = [head[0] // CHANNEL_SPAN_MS for head in found]
        return len(set(hours)) < len(hours)
    lines = sum(head[4] for head in found)
    return len(found) > -(-lines // MAX_BLOCK_LINES)


BlockRow = tuple[int, Any, bytes, int, int | None, int]
"""A block as read: ``(first_ms, block id, frame bytes, write time µs, ttl s, last_ms)``."""


@dataclass
class Read:
    """A partition's blocks as read (:data:`BlockRow`)."""

    rows: list[BlockRow]

    def lines(self, key: tuple[Any, ...]) -> list[Framed]:
        """Every line of the blocks (a line in two blocks twice: blocks_of keeps one)."""
        channel_key = key[0]
        out = []
        for _first, _block, value, _written, _ttl, _last in self.rows:
            decoded = frame.decode(value)
            for line in decoded.lines(range(len(decoded))):
                out.append(Framed(line, channel_key, line[5], line_order(line[0], line[1])))
        return out


def read(blocks: Blocks, key: tuple[Any, ...]) -> Read:
    """Every block of the partition ``key``."""
    return _as_read(blocks.session.execute(blocks.read, key, timeout=120))


def read_chosen(blocks: Blocks, key: tuple[Any, ...], chosen: Sequence[Head]) -> Read:
    """The blocks ``chosen`` of the partition ``key`` (read up to the latest first line among them)."""
    until = max(head[0] for head in chosen)
    ids = {head[1] for head in chosen}
    rows = blocks.session.execute(blocks.read_until, (*key, _naive(until)), timeout=120)
    return _as_read(rows, ids)


def _as_read(rows: Iterable[Any], ids: Container[Any] | None = None) -> Read:
    return Read(
        [
            (r.first_ms, r.block, r.frame, r.written, r.ttl, r.last_ms)
            for r in rows
            if ids is None or r.block in ids
        ]
    )


def rewrite(
    blocks: Blocks,
    key: tuple[Any, ...],
    found: Read,
    keep: Callable[[frame.Line], bool] | None = None,
    *,
    level: int = frame.PACKED_LEVEL,
    index_at: int | None = None,
) -> tuple[int, int, int, int, bool]:
    """The lines of ``found`` (each once; those ``keep`` takes) written as new blocks of partition ``key``,
    the blocks they replace deleted at their own write times, in one single-partition batch (several past
    :data:`MAX_BATCH_STATEMENTS`); with nothing left, the partition's index row deleted too at ``index_at``
    (µs). Returns (blocks before, blocks after, lines, lines dropped, whether anything was written: False
    when the blocks read are already the blocks of their lines, as a channel day packed before is, one block
    per hour)."""
    from cassandra.query import BatchStatement, BatchType

    lines = found.lines(key)
    kept = lines if keep is None else [item for item in lines if keep(item.line)]
    runs = runs_of(blocks.table, kept) if kept else []
    old_ids = {row[1] for row in found.rows}
    new_ids = {run_id(run) for run in runs}
    unique = len({item.line[1] for item in lines})
    if old_ids == new_ids:  # packed already (a channel day: one block per hour): nothing to frame
        return len(found.rows), len(runs), unique, 0, False
    new: list[Block] = [block_of(blocks.table, key, run, level=level) for run in runs]
    ttls = [row[4] for row in found.rows if row[4]]
    ttl = max(ttls) if len(ttls) == len(found.rows) else 0  # the longest left (none: no expiry)
    ttl_cell = ttl.to_bytes(4, "big", signed=True)
    statements: list[tuple[Any, Any]] = [
        (block_statement(blocks.write, block, ttl_cell), None) for block in new if block.block not in old_ids
    ]
    statements += [
        (blocks.delete, (written, *key, _naive(first_ms), block_id))
        for first_ms, block_id, _value, written, _ttl, _last in found.rows
        if block_id not in new_ids
    ]
    for start in range(0, len(statements), MAX_BATCH_STATEMENTS):  # the new blocks go first
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for statement, values in statements[start : start + MAX_BATCH_STATEMENTS]:
            batch.add(statement, values)
        with WRITES:
            blocks.session.execute(batch, timeout=120)
    if not new and index_at is not None:
        blocks.session.execute(blocks.delete_index, (index_at, *key), timeout=60)
    return len(found.rows), len(new), unique, unique - len({item.line[1] for item in kept}), True


def _naive(ms: int) -> Any:
    from core.times import naive_utc

    return naive_utc(ms)


Partition = tuple[Table, tuple[Any, ...], bool]
"""A block table, a partition's key, and whether its period is closed (ended the settle time ago)."""


def partitions(session: Any, keyspace: str, settle_ms: int, now: int) -> Iterator[Partition]:
    """Every partition of a period that began at least ``settle_ms`` before ``now``: channels' days and
    users' months, each marked closed when the period ended that long ago."""
    cutoff = now - settle_ms
    for row in session.execute(f"SELECT channel_key, day, part FROM {keyspace}.channel_days", timeout=120):
        if row.day * DAY_MS <= cutoff:
            yield CHANNEL, (row.channel_key, row.day, row.part), (row.day + 1) * DAY_MS <= cutoff
    rows = session.execute(
        f"SELECT channel_key, user_key, month, part FROM {keyspace}.user_months", timeout=120
    )
    for row in rows:
        if month_start_ms(row.month) <= cutoff:
            key = (row.channel_key, row.user_key, row.month, row.part)
            yield USER, key, month_end_ms(row.month) <= cutoff


def pack(
    session: Any,
    keyspace: str,
    *,
    settle_s: float = 3600.0,
    concurrency: int = 8,
    level: int = frame.PACKED_LEVEL,
    tell: Callable[[str], None] = lambda _m: None,
    retry_s: float = 120.0,
) -> PackReport:
    """Pack every closed partition of ``keyspace`` that holds more than one block, and the blocks of open
    ones sent before ``settle_s`` ago (see the module doc); a partition Cassandra fails on (busy, timing out)
    is tried again for up to ``retry_s``."""
    from store.write import worker_session_of

    prepared = worker_session_of(session).prepared(keyspace, "LOCAL_QUORUM", 120.0)
    tables = {t: Blocks(session, keyspace, t) for t in (CHANNEL, USER)}
    for table in tables.values():
        table.write = prepared
    report = PackReport()
    settle_us = int(settle_s * 1_000_000)

    now = current_ms()
    cutoff = now - int(settle_s * 1000)

    def one(item: Partition) -> tuple[str, int, int, int]:
        """One partition, again while Cassandra fails for a while (a busy node: every step is idempotent)."""
        from cassandra import InvalidRequest

        return cast(
            tuple[str, int, int, int],
            with_retry(
                f"packing {BLOCK_TABLES[item[0]]} {item[1]}",
                retry_s,
                lambda: attempt(item),
                fatal=(InvalidRequest, frame.FrameError, ValueError),
                setting="",
            ),
        )

    def attempt(item: Partition) -> tuple[str, int, int, int]:
        table, key, closed = item
        blocks = tables[table]
        found = heads(blocks, key)
        if not closed:
            found = [head for head in found if head[3] <= cutoff]  # all its lines sent before the cutoff
        if not mergeable(table, found):
            return "single", 0, 0, 0
        if closed:
            if max(head[2] for head in found) > time.time_ns() // 1000 - settle_us:
                return "recent", 0, 0, 0
            rows = read(blocks, key)
        else:
            rows = read_chosen(blocks, key, found)
        before, after, lines, _dropped, changed = rewrite(blocks, key, rows, level=level)
        return ("packed", before, after, lines) if changed else ("single", 0, 0, 0)

    items = list(partitions(session, keyspace, int(settle_s * 1000), now))
    report.partitions = sum(1 for item in items if item[2])
    report.open_partitions = len(items) - report.partitions
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for (kind, _key, closed), (outcome, before, after, lines) in zip(
            items, pool.map(one, items), strict=True
        ):
            if outcome == "recent":
                report.skipped_recent += 1
            elif outcome == "packed":
                if closed:
                    report.packed += 1
                else:
                    report.open_packed += 1
                report.blocks_before += before
                report.blocks_after += after
                report.lines += lines
                name = BLOCK_TABLES[kind]
                report.by_table[name] = report.by_table.get(name, 0) + 1
    tell(report.summary())
    return report
