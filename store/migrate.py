"""A keyspace of an earlier layout moved to the current one: ``chatlog init``.

Layout 2 to 3 (:func:`fill_parts`): ``user_blocks`` gets its static ``parts`` (the column is added by
:func:`store.schema.create`), and each user's month with parts beyond 0 (its ``user_months`` rows) has them
written into its part 0, with the longest time to live of their blocks. No row is rewritten; running it
again writes the same cells.

Layout 1 (a row per message) to blocks (:func:`migrate`):

Layout 1 kept each line twice as rows: ``chat_by_channel`` (partition ``(channel_key, bucket)``, 5-minute
buckets listed by ``chat_buckets``) and ``chat_by_user`` (partition ``(channel_key, user_key, period)``: a
month, ``yyyymm * 100``, or a half day for a bot's month; a closed month possibly packed into the static
``packed`` frame, with rows written after it beside it). Every generation of it is read here; none is read
anywhere else.

Channel key by channel key (in order), :func:`migrate` reads the key's rows of both tables and writes them
as blocks: a channel's lines per day, a user's per month (one block per period, cut at the block bounds;
a period of more than :data:`PART_LINES` lines into its parts), framed at :data:`store.frame.PACKED_LEVEL`,
each line's stored form, id, times and order kept as they were, so every read answers byte-identical. The
counts are checked per key: the distinct (partition, message id) rows read from each old table must equal
the lines written to its new one, else it stops with the key and both counts. Progress is recorded in
``layout.migration`` after each key: a migration that was killed goes on from the key after the last one
done (the blocks of a key done twice are the same rows). Once every key is done, the old tables are
dropped and :data:`store.layout.LAYOUT` recorded.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from store import frame
from store.blocks import CHANNEL, USER, Block, Framed, Table, blocks_of, chat_split
from store.keys import channel_part, day_of, filed_under, line_order, month_of, user_part, uuid_text
from store.layout import NAME, OLD_TABLES, columns_of, tables_of
from store.line import stored_event

PART_LINES: Final = 200_000
"""A period with more lines than this is written into its parts (a half hour of a day, a day of a month)."""
OLD_INDEXES: Final = ("chat_buckets", "user_login_keys")
_HALF_DAY_MAX: Final = 1_000_000
_MONTH_MIN: Final = 100_001 * 100


@dataclass
class MigrationReport:
    """What a migration read and wrote."""

    keys: int = 0
    """Channel keys done by this run."""
    skipped: int = 0
    """Channel keys an earlier run had done."""
    rows: Counter[str] = field(default_factory=Counter)
    """Rows of layout 1 read, by the table they were read for (``channel``, ``user``)."""
    blocks: Counter[str] = field(default_factory=Counter)
    """Blocks written, by table."""


class MigrationMismatch(RuntimeError):
    """The lines written do not match the rows read (the migration stops; nothing is dropped)."""


def _old_period_month(period: int) -> int | None:
    """The month (``yyyymm``) of an old ``chat_by_user`` period (a month or a half day), None for an old
    pointer period no reader read any more."""
    if period >= _MONTH_MIN:
        return period // 100
    if period < _HALF_DAY_MAX:
        return month_of(period * 43_200_000)
    return None


class _Old:
    """The statements that read layout 1."""

    def __init__(self, session: Any, keyspace: str) -> None:
        from cassandra.query import SimpleStatement

        self.session = session
        self.keyspace = keyspace
        tables = tables_of(session, keyspace)
        self.has_channel = "chat_by_channel" in tables
        self.has_user = "chat_by_user" in tables
        columns = columns_of(session, keyspace, "chat_by_user") if self.has_user else set()
        self.packed = "packed" in columns
        rows = (
            "toUnixTimestamp(sent_at) AS sent_ms, CAST(message_id AS text) AS mid, line, "
            "toUnixTimestamp(received_at) AS received_ms"
        )
        self.channel_partitions = SimpleStatement(
            f"SELECT DISTINCT channel_key, bucket FROM {keyspace}.chat_by_channel", fetch_size=5000
        )
        self.user_partitions = SimpleStatement(
            f"SELECT DISTINCT channel_key, user_key, period FROM {keyspace}.chat_by_user", fetch_size=5000
        )
        if self.has_channel:
            self.channel_rows = session.prepare(
                f"SELECT {rows} FROM {keyspace}.chat_by_channel WHERE channel_key = ? AND bucket = ?"
            )
            self.channel_rows.fetch_size = 5000
        if self.has_user:
            # a column an earlier generation lacks is left out, and read as absent (getattr below)
            user_columns = ["toUnixTimestamp(sent_at) AS sent_ms", "CAST(message_id AS text) AS mid"]
            user_columns += ["line"] if "line" in columns else []
            user_columns += (
                ["toUnixTimestamp(received_at) AS received_ms"] if "received_at" in columns else []
            )
            user_columns += ["packed"] if self.packed else []
            self.user_rows = session.prepare(
                f"SELECT {', '.join(user_columns)} FROM {keyspace}.chat_by_user "
                "WHERE channel_key = ? AND user_key = ? AND period = ?"
            )
            self.user_rows.fetch_size = 5000

    def partitions(self) -> dict[str, tuple[list[Any], list[tuple[str, int]]]]:
        """Channel key -> (its bucket starts, its (user key, period) partitions)."""
        found: dict[str, tuple[list[Any], list[tuple[str, int]]]] = {}
        if self.has_channel:
            for row in self.session.execute(self.channel_partitions, timeout=300):
                found.setdefault(row.channel_key, ([], []))[0].append(row.bucket)
        if self.has_user:
            for row in self.session.execute(self.user_partitions, timeout=300):
                if _old_period_month(row.period) is not None:
                    found.setdefault(row.channel_key, ([], []))[1].append((row.user_key, row.period))
        return found


def _line(
    sent: int, mid: str, stored: str, received: int | None, hint: str, who: str | None = None, *, user: bool
) -> Framed:
    """An old row as a framed line: its stored form, id and times as they were; its chat split and (for a
    channel row) the user it is filed under, from its parse."""
    message = uuid.UUID(mid).bytes
    event = stored_event(stored, mid, sent, received, hint)
    filed = who if user else filed_under(event)
    line: frame.Line = (sent, message, stored, received, chat_split(event), filed)
    return Framed(line, "", filed, line_order(sent, message))


def _cut(
    table: Table, base: tuple[Any, ...], items: list[Framed], place: Callable[[int], int]
) -> Iterator[Block]:
    """One period's lines as blocks: part 0, or its parts when it holds more than :data:`PART_LINES`."""
    if len(items) <= PART_LINES:
        yield from blocks_of(table, (*base, 0), items, level=frame.PACKED_LEVEL)
        return
    parts: dict[int, list[Framed]] = {}
    for item in items:
        parts.setdefault(place(item.line[0]), []).append(item)
    for part, run in sorted(parts.items()):
        yield from blocks_of(table, (*base, part), run, level=frame.PACKED_LEVEL)


def _channel_blocks(old: _Old, key: str, buckets: Iterable[Any]) -> tuple[int, list[Block]]:
    days: dict[int, dict[bytes, Framed]] = {}
    rows = 0
    hint = key.removeprefix("login:")
    for bucket in sorted(buckets):
        for row in old.session.execute(old.channel_rows, (key, bucket), timeout=120):
            item = _line(row.sent_ms, row.mid, row.line or "", row.received_ms, hint, user=False)
            day = days.setdefault(day_of(row.sent_ms), {})
            if item.line[1] not in day:
                day[item.line[1]] = item
                rows += 1
    blocks = [
        block
        for day, items in sorted(days.items())
        for block in _cut(CHANNEL, (key, day), list(items.values()), channel_part)
    ]
    return rows, blocks


def _user_blocks(old: _Old, key: str, partitions: Iterable[tuple[str, int]]) -> tuple[int, list[Block]]:
    months: dict[tuple[str, int], dict[bytes, Framed]] = {}
    hint = key.removeprefix("login:")
    for user, period in sorted(partitions):
        month = _old_period_month(period)
        assert month is not None
        found = months.setdefault((user, month), {})
        packed: bytes | None = None
        for row in old.session.execute(old.user_rows, (key, user, period), timeout=120):
            packed = packed or getattr(row, "packed", None)
            if row.sent_ms is None:  # a partition holding only its statics
                continue
            line, received = getattr(row, "line", None) or "", getattr(row, "received_ms", None)
            item = _line(row.sent_ms, row.mid, line, received, hint, user, user=True)
            found.setdefault(item.line[1], item)
        if packed:
            old_frame = frame.decode(packed)
            ids, stored, received = old_frame.rest()
            for i, sent in enumerate(old_frame.sents):
                if ids[i] not in found:
                    found[ids[i]] = _line(
                        sent, uuid_text(ids[i]), stored[i], received[i], hint, user, user=True
                    )
    rows = sum(len(items) for items in months.values())
    blocks = [
        block
        for (user, month), items in sorted(months.items())
        for block in _cut(USER, (key, user, month), list(items.values()), user_part)
    ]
    return rows, blocks


def _progress(session: Any, keyspace: str) -> str | None:
    rows = session.execute(f"SELECT migration FROM {keyspace}.layout WHERE name = %s", (NAME,)).all()
    if not rows or not rows[0].migration:
        return None
    done: str | None = json.loads(rows[0].migration).get("done_through")
    return done


def _record(session: Any, keyspace: str, done_through: str) -> None:
    session.execute(
        f"UPDATE {keyspace}.layout SET migration = %s WHERE name = %s",
        (json.dumps({"from": 1, "done_through": done_through}), NAME),
    )


def migrate(
    session: Any,
    keyspace: str,
    *,
    tell: Callable[[str], None] = lambda _m: None,
    progress: Callable[[int, int, MigrationReport], None] = lambda _done, _total, _report: None,
    drop: bool = True,
) -> MigrationReport:
    """Move ``keyspace`` from layout 1 to blocks (the module doc); its new tables must exist. Raises
    :class:`MigrationMismatch` when a key's lines do not match its rows."""
    from store.write import TaskWrite, WriteOptions, worker_session_of

    old = _Old(session, keyspace)
    report = MigrationReport()
    partitions = old.partitions()
    keys = sorted(partitions)
    done_through = _progress(session, keyspace)
    writer_session = worker_session_of(session)
    options = WriteOptions(keyspace=keyspace, consistency="LOCAL_QUORUM", level=frame.PACKED_LEVEL)
    tell(f"migrating keyspace {keyspace} to blocks: {len(keys)} channel key(s)")
    for n, key in enumerate(keys, 1):
        if done_through is not None and key <= done_through:
            report.skipped += 1
            progress(n, len(keys), report)
            continue
        buckets, users = partitions[key]
        channel_rows, channel_blocks = _channel_blocks(old, key, buckets) if old.has_channel else (0, [])
        user_rows, user_blocks = _user_blocks(old, key, users) if old.has_user else (0, [])
        checks = (("channel", channel_rows, channel_blocks), ("user", user_rows, user_blocks))
        for table, rows, blocks in checks:
            lines = sum(b.lines for b in blocks)
            if lines != rows:
                raise MigrationMismatch(
                    f"channel key {key}: {rows} {table} row(s) read, {lines} line(s) in blocks: "
                    "nothing dropped"
                )
        task = TaskWrite(writer_session, options)
        task.add_blocks([*channel_blocks, *user_blocks])
        written = task.finish()
        report.blocks.update(written.rows)
        report.rows.update({"channel": channel_rows, "user": user_rows})
        report.keys += 1
        _record(session, keyspace, key)
        progress(n, len(keys), report)
    tell(
        f"migrated {report.rows['channel']} channel row(s) and {report.rows['user']} user row(s) into "
        + ", ".join(f"{n} {t}" for t, n in sorted(report.blocks.items()))
        + (f" ({report.skipped} key(s) done by an earlier run)" if report.skipped else "")
    )
    if drop:
        for table in (*OLD_TABLES, *OLD_INDEXES):
            session.execute(f"DROP TABLE IF EXISTS {keyspace}.{table}", timeout=120)
        tell(f"dropped the tables of layout 1: {', '.join((*OLD_TABLES, *OLD_INDEXES))}")
    return report


def fill_parts(session: Any, keyspace: str, *, tell: Callable[[str], None] = lambda _m: None) -> int:
    """Write into part 0 of each user's month the parts beyond 0 that ``user_months`` lists for it (the
    module doc); returns how many months have parts."""
    months: dict[tuple[str, str, int], set[int]] = {}
    for row in session.execute(
        f"SELECT channel_key, user_key, month, part FROM {keyspace}.user_months", timeout=120
    ):
        if row.part != 0:
            months.setdefault((row.channel_key, row.user_key, row.month), set()).add(row.part)
    ttls = session.prepare(
        f"SELECT ttl(lines) FROM {keyspace}.user_blocks WHERE channel_key = ? AND user_key = ? AND month = ? "
        "AND part = ?"
    )
    add = session.prepare(
        f"UPDATE {keyspace}.user_blocks USING TTL ? SET parts = parts + ? WHERE channel_key = ? AND "
        "user_key = ? AND month = ? AND part = 0"
    )
    for (channel_key, user_key, month), parts in sorted(months.items()):
        for part in sorted(parts):
            left = [row[0] for row in session.execute(ttls, (channel_key, user_key, month, part), timeout=60)]
            if not left:  # its blocks expired or erased: nothing to find
                continue
            ttl = 0 if None in left else max(left)
            session.execute(add, (ttl, {part}, channel_key, user_key, month), timeout=60)
    tell(f"named the parts beyond 0 of {len(months)} user month(s) in their part 0")
    return len(months)
