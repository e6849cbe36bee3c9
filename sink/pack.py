"""``chatlog pack``: a closed user-month's rows replaced by one packed cell (:mod:`schemas.packed_month`).

The sink writes one ``chat_by_user`` row per event; a user's month is then ~300 rows that Cassandra and the
driver handle one by one on every read of it (docs/storage.md, "A user's month"). Once the month is over its
rows no longer change but for late writes (a backfill, a replay), so this job packs them: per month
partition (``period = yyyymm * 100``) of a month that ended, in one single-partition batch (atomic and
isolated in Cassandra):

1. ``DELETE ... USING TIMESTAMP t`` of the partition, ``t`` the newest write time among the rows read;
2. ``UPDATE ... USING TIMESTAMP t + 1 SET packed = <frame>, packed_rows = <n>`` (the rows' longest TTL left).

A row written after the read has a later write time than ``t`` and survives the delete: the readers merge
the frame with the partition's rows (dropping an id read twice), and the next run packs them in. A row
could be lost only if a writer's clock were behind by more than the time since the partition's last write,
so a partition written within ``settle_s`` (an hour by default) is left for a later run. Left as they
are: a ``spilled`` month (a bot's: its rows are in half days too) and a month whose frame would be
larger than :data:`MAX_FRAME_BYTES` (a cell is one mutation: Cassandra refuses one over half a commit log
segment, 16 MiB by default). Running it again packs nothing twice: a partition holding only its frame is
skipped after a one-row probe.

Frames are written in version 3 of :mod:`schemas.packed_month`: each chat message's channel, sender and
text found once here (:func:`chat_split`) and stored instead of its line's trailing text, so that a reader
does not parse the line for them, with whether its tag section is plain (a json answer then makes its tags'
JSON by replaces). A partition that holds an older frame only (packed before) is read as well as a version
3 one and left as it is, unless the run is asked to ``repack`` (``chatlog pack --repack``): then its frame is
written anew in version 3 from its own rows (with a later write time, over the old one; no row is deleted, so
a row written meanwhile stays a late row). One that got late rows is packed again, in version 3.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from core.errors import ChatlogError
from core.irc_parse import privmsg_fields, privmsg_parts, tag_section
from core.irc_tags import plain_tags
from core.times import epoch_ms
from core.times import now_ms as current_ms
from core.user_months import has_column
from schemas.cql import clustering_order, is_month_period, month_end_ms
from schemas.packed_month import (
    LEVEL,
    VERSION,
    ChatSplit,
    PackedRow,
    PackError,
    pack,
    unpack,
    unpack_frame,
)
from schemas.stored_line import restore, unmarked

__all__ = ["MAX_FRAME_BYTES", "PackReport", "chat_split", "pack_months", "packed_frame"]

MAX_FRAME_BYTES: Final = 8 * 1024 * 1024
"""A frame larger than this is not written (the month's rows stay): half of Cassandra's largest mutation."""
_SCAN_PAGE: Final = 5000

Key = tuple[str, str, int]
"""A month partition of ``chat_by_user``: (channel key, user key, period)."""


@dataclass
class PackReport:
    """What one run did."""

    months: int = 0
    """Month partitions of ended months seen."""
    packed: int = 0
    """Month partitions packed (or packed again with their late rows)."""
    repacked: int = 0
    """Month partitions whose frame alone, of an older version, was written anew (``repack``)."""
    rows: int = 0
    """Rows the frames written hold."""
    frame_bytes: int = 0
    """Bytes of the frames written."""
    skipped: dict[str, int] = field(
        default_factory=lambda: {"recent": 0, "spilled": 0, "large": 0, "dropped": 0, "damaged": 0}
    )
    """Month partitions left as they are, by why: written within the settle time, a bot's (spilled),
    a frame over :data:`MAX_FRAME_BYTES`, rows older than a drop of the frame's columns (see
    :func:`_dropped_us`), a frame that ``repack`` could not read."""

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in self.skipped.items() if n) or "none"
        again = f" ({self.repacked} packed again in version {VERSION})" if self.repacked else ""
        return (
            f"packed {self.packed + self.repacked} of {self.months} ended user-month(s){again}: {self.rows} "
            f"row(s) into {self.frame_bytes / 1e6:.1f} MB of frames; left as they are: {skipped}"
        )


class _Statements:
    def __init__(self, session: Any, keyspace: str) -> None:
        k = keyspace
        where = "WHERE channel_key = ? AND user_key = ? AND period = ?"
        prepare = session.prepare
        self.scan = f"SELECT DISTINCT channel_key, user_key, period, spilled FROM {k}.chat_by_user"
        self.has_rows = prepare(f"SELECT sent_at FROM {k}.chat_by_user {where} AND sent_at >= ? LIMIT 1")
        self.read = prepare(
            "SELECT toUnixTimestamp(sent_at) AS sent_ms, CAST(message_id AS text) AS mid, line, "
            "toUnixTimestamp(received_at) AS received_ms, WRITETIME(line) AS written, TTL(line) AS ttl, "
            f"packed, TTL(packed) AS packed_ttl, spilled FROM {k}.chat_by_user {where}"
        )
        self.read.fetch_size = _SCAN_PAGE
        self.statics = prepare(
            "SELECT packed, TTL(packed) AS packed_ttl, WRITETIME(packed) AS packed_written, spilled "
            f"FROM {k}.chat_by_user {where} LIMIT 1"
        )
        self.delete = prepare(f"DELETE FROM {k}.chat_by_user USING TIMESTAMP ? {where}")
        self.write = prepare(
            f"UPDATE {k}.chat_by_user USING TIMESTAMP ? AND TTL ? SET packed = ?, packed_rows = ? {where}"
        )


def _ended_months(session: Any, st: _Statements, before_ms: int, report: PackReport) -> Iterator[Key]:
    from cassandra.query import SimpleStatement

    for row in session.execute(SimpleStatement(st.scan, fetch_size=_SCAN_PAGE), timeout=120):
        period = row.period
        if not is_month_period(period) or month_end_ms(period) > before_ms:
            continue
        report.months += 1
        if row.spilled:
            report.skipped["spilled"] += 1
            continue
        yield row.channel_key, row.user_key, period


def chat_split(row: PackedRow) -> ChatSplit | None:
    """``(channel, user_login, text, is_action, plain)`` of a row whose line is a chat message with a text,
    as a read gives them (from the stored line by :func:`core.irc_parse.privmsg_parts`, and from the
    restored one by :func:`core.irc_parse.privmsg_fields`, which a json answer reads: both must give them,
    the same); None for every other line and for one that ends in ``\\r`` (the parser leaves that out of
    its raw line). :func:`schemas.packed_month.pack` then splits the line where its end is that text
    exactly. ``plain``: whether the line's tag section is plain (:func:`core.irc_tags.plain_tags`)."""
    sent_ms, message_id, line, _ = row
    plain = unmarked(line)
    if plain[-1:] == "\r":
        return None
    parts = privmsg_parts(plain)
    if parts is None or parts[2] is None:
        return None
    raw = restore(line, message_id, sent_ms)
    fields = privmsg_fields(raw)
    if fields is None or (fields[2], fields[3], fields[4]) != parts:
        return None
    section = tag_section(raw)
    return parts[0], parts[1], parts[2], fields[5], bool(section) and plain_tags(section)


def packed_frame(rows: list[PackedRow], *, level: int = LEVEL) -> bytes:
    """The frame of ``rows`` (clustering order), each chat message split (:func:`chat_split`)."""
    return pack(rows, [chat_split(row) for row in rows], level=level)


def _merged(rows: list[Any], packed: bytes | None) -> list[PackedRow]:
    """The partition's rows and its frame's (if any), in clustering order, a (time, id) once."""
    found: dict[tuple[int, str], PackedRow] = {}
    if packed is not None:
        for old in unpack(packed):
            found[(old[0], old[1])] = old[:4]
    for row in rows:
        found[(row.sent_ms, row.mid)] = (row.sent_ms, row.mid, row.line or "", row.received_ms)
    return sorted(found.values(), key=lambda r: clustering_order(r[0], uuid.UUID(r[1])))


Outcome = tuple[str, int, int]
"""(``packed``, a reason it was skipped, or ``""`` for nothing to do; rows packed; frame bytes)."""


def _dropped_us(session: Any, keyspace: str) -> int:
    """When ``packed`` or ``packed_rows`` was last dropped from ``chat_by_user`` (µs; 0: never). Cassandra
    ignores a re-added column's cells written with an older timestamp, and a frame is written with its rows'
    write time: a partition whose rows are older than the drop is left as rows, or its frame would not be
    seen once its rows are deleted."""
    rows = session.execute(
        "SELECT column_name, dropped_time FROM system_schema.dropped_columns "
        "WHERE keyspace_name = %s AND table_name = 'chat_by_user'",
        (keyspace,),
    )
    times = [row.dropped_time for row in rows if row.column_name in ("packed", "packed_rows")]
    return max((epoch_ms(t) * 1000 for t in times), default=0)


def _repacked(session: Any, st: _Statements, key: Key, level: int) -> Outcome:
    """A partition that holds its frame alone: written anew where the frame is of an older version (its rows
    read back from it), over the old one (a later write time); left as it is otherwise."""
    head = session.execute(st.statics, key).one()
    if head is None or head.packed is None or head.spilled:
        return "", 0, 0
    try:
        frame = unpack_frame(head.packed)
        if frame.version >= VERSION:
            return "", 0, 0
        ids, lines, received = frame.rest()
    except PackError:
        return "damaged", 0, 0
    rows = list(zip(frame.sents, ids, lines, received, strict=True))
    value = packed_frame(rows, level=level)
    session.execute(
        st.write, (head.packed_written + 1, head.packed_ttl or 0, value, len(rows), *key), timeout=60
    )
    return "repacked", len(rows), len(value)


def _pack_one(
    session: Any, st: _Statements, key: Key, settle_us: int, level: int, dropped_us: int, repack: bool
) -> Outcome:
    from cassandra.query import BatchStatement, BatchType

    from core.times import naive_utc

    if not session.execute(st.has_rows, (*key, naive_utc(0))).one():  # its frame alone, or its flag alone
        return _repacked(session, st, key, level) if repack else ("", 0, 0)
    rows = list(session.execute(st.read, key))
    head = rows[0]
    if head.spilled:  # set since the scan
        return "spilled", 0, 0
    rows = [row for row in rows if row.sent_ms is not None]
    if not rows:
        return "", 0, 0
    written = max(row.written or 0 for row in rows)  # a row without its line (none is written so) stays
    if time.time_ns() // 1000 - written < settle_us:
        return "recent", 0, 0
    if written + 1 <= dropped_us:
        return "dropped", 0, 0
    merged = _merged(rows, head.packed)
    frame = packed_frame(merged, level=level)
    if len(frame) > MAX_FRAME_BYTES:
        return "large", 0, 0
    ttls = [row.ttl for row in rows] + ([head.packed_ttl] if head.packed is not None else [])
    ttl = 0 if any(t is None for t in ttls) else max(ttls)
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)  # one partition: atomic and isolated
    batch.add(st.delete, (written, *key))
    batch.add(st.write, (written + 1, ttl, frame, len(merged), *key))
    session.execute(batch, timeout=60)
    return "packed", len(merged), len(frame)


def pack_months(
    session: Any,
    keyspace: str,
    *,
    settle_s: float = 3600.0,
    now_ms: int | None = None,
    concurrency: int = 8,
    level: int = LEVEL,
    repack: bool = False,
    tell: Callable[[str], None] = lambda _m: None,
) -> PackReport:
    """Pack every user-month of ``keyspace`` that ended ``settle_s`` before ``now_ms`` (default: now) and
    was not written within ``settle_s`` (see the module doc); with ``repack``, write anew in the current
    version the frames of an older one that are alone in their partition."""
    now = current_ms() if now_ms is None else now_ms
    settle_us = int(settle_s * 1_000_000)
    if not has_column(session, keyspace, "packed"):
        raise ChatlogError(
            f"keyspace {keyspace} has no column chat_by_user.packed yet: `chatlog init` adds it (then pack)"
        )
    st = _Statements(session, keyspace)
    dropped_us = _dropped_us(session, keyspace)
    report = PackReport()
    done = 0
    with ThreadPoolExecutor(max_workers=max(concurrency, 1)) as pool:
        months = _ended_months(session, st, now - int(settle_s * 1000), report)
        outcomes = pool.map(
            lambda key: _pack_one(session, st, key, settle_us, level, dropped_us, repack), months
        )
        for outcome, rows, size in outcomes:
            done += 1
            if outcome in ("packed", "repacked"):
                if outcome == "packed":
                    report.packed += 1
                else:
                    report.repacked += 1
                report.rows += rows
                report.frame_bytes += size
            elif outcome:
                report.skipped[outcome] += 1
            if done % 10_000 == 0:
                tell(f"pack: {done} user-month(s) looked at, {report.packed} packed")
    return report
