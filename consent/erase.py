"""Erasure: every stored row of a user (everywhere, or in one channel), or of a whole channel.

The tables (``schemas/cassandra.cql``) and how each is reached:

* ``chat_by_user``: a user's pointers, partition ``(channel_key, user_key, period)``. The user's keys are
  its Twitch id and ``login:<login>`` for every login of it in ``user_names`` (a deleted message names its
  user by login only, and lines without ids are keyed by login). Its channels: the one given, else every
  channel key of ``chat_buckets``; its periods: the months and half days of the channel's buckets (asked
  64 at a time, for the non-empty ones, then those read). The pointers include the
  bans, timeouts and deleted messages that target the user, and a packed month's are its frame's rows
  (``chatlog pack``, :mod:`sink.pack`): the partition delete removes the frame with the rows.
* ``user_login_keys`` (the index of the ``login:`` keys with rows per channel-month): the row of each
  (channel, month, login key) whose partitions were found, once the channel's partitions are deleted; for a
  channel, the partition of every month of its buckets, once its buckets are done.
* ``chat_by_channel``: the rows the pointers point to. In each 5-minute bucket that holds any, the bucket's
  keys are read and the user's rows deleted as whole runs: the whole partition when every row is the
  user's, a clustering range for a run of two or more consecutive rows, a row delete for a lone row. So the
  tombstones are partition, range or row tombstones, never one per cell.
* ``user_names`` (partition of the id) and ``user_ids_by_login`` (a row per login), when the user is erased
  everywhere (they are not per channel). Before they go, each login's digest is written to
  ``erased_logins`` (:func:`consent.records.login_digest`): a deleted message names its author by login
  only, and a sink started after the erasure matches such a line by the digest (sink/side/optout_follower.py).
* A channel: every bucket of ``chat_buckets``; in each, the users of its rows (parsed as the sink keys
  them: sender, else the target of a ban or deleted message) give the ``chat_by_user`` partitions of the
  channel (there is no other way to list them: their key starts with the channel, but it is a partition
  key), then the bucket's ``chat_by_channel`` partition; once every bucket is done, the channel's
  ``chat_buckets`` partition, then its ``channel_ids_by_login`` rows and ``channel_names`` partition.
  The coverage ledger (times an ingester logged the channel, no chat) stays.

Safe to re-run after a crash at any point: payload rows are deleted before the pointers that find them
(a user's ``chat_by_channel`` rows before the pointer partition, the names last); for a channel, a bucket's
pointer partitions before its rows, and the ``chat_buckets`` partition that lists the buckets after them
all (a re-run reads the emptied buckets again, cheaply: nothing is in them). A second run finds what is left
and deletes it; when nothing is left it deletes nothing. Counts in :class:`ErasureReport` are of rows found
and deleted by this run.

Each delete carries as its timestamp the time just before the read that found its rows (:func:`now_us`),
so a row written after that read is newer and stays: another user's late event inside a deleted range, a
new bucket of a channel, and equally a replayed row of the erased user, which is why the sink drops
opted-out users and channels before writing.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Final

from consent import audit
from consent.records import Kind, check_id, login_digest
from consent.rule import whose
from core.errors import ChatlogError, one_line
from core.irc_parse import MalformedLine, parse_line
from core.times import epoch_ms
from core.user_months import has_column
from schemas.cql import LOGIN_KEY_PREFIX, bucket_of, month_of, month_period, user_key, user_period
from schemas.packed_month import unpack
from schemas.stored_line import restore

TABLES: Final = (
    "chat_by_channel",
    "chat_by_user",
    "chat_buckets",
    "user_login_keys",
    "user_names",
    "user_ids_by_login",
    "channel_names",
    "channel_ids_by_login",
)
"""Every table erasure deletes from, in the order reports list them."""

CONCURRENCY: Final = 32
"""Requests in flight at once."""
PROBE_PERIODS: Final = 64
"""User periods asked at once (one ``IN`` query) to find the user's non-empty pointer partitions."""


Progress = Callable[[str], None]
"""Told a short line after each step (a pointer partition, a bucket): for a live report, and crash tests."""


@dataclass
class ErasureReport:
    """What an erasure deleted: rows per table, and partitions deleted whole per table."""

    user_id: str | None
    channel_id: str | None
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    partitions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    at: int = 0
    """When it ran (epoch ms): its audit row's time."""

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    def deleted(self) -> dict[str, int]:
        """Rows per table, and ``<table>:partitions`` for the partitions deleted whole (non-zero only)."""
        out = {t: n for t, n in self.rows.items() if n}
        out.update({f"{t}:partitions": n for t, n in self.partitions.items() if n})
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "channel_id": self.channel_id,
            "rows": dict(self.rows),
            "partitions": dict(self.partitions),
        }


def now_us() -> int:
    """The write timestamp of a delete (microseconds, as the driver's own): taken before the read whose
    rows it deletes, so a row written after that read (a late event of someone else inside a deleted range,
    a new bucket of a channel) is newer than the tombstone and stays."""
    return time.time_ns() // 1000


class _Cql:
    """The statements of one keyspace, prepared once, and concurrent execution."""

    def __init__(self, session: Any, keyspace: str) -> None:
        self.session = session
        self.keyspace = keyspace
        k = keyspace
        prepare = session.prepare
        self.user_logins = prepare(f"SELECT user_login FROM {k}.user_names WHERE user_id = ?")
        self.channel_logins = prepare(f"SELECT channel FROM {k}.channel_names WHERE channel_id = ?")
        self.keep_digest = prepare(f"INSERT INTO {k}.erased_logins (user_id, digest) VALUES (?, ?)")
        self.channel_keys = f"SELECT DISTINCT channel_key FROM {k}.chat_buckets"
        self.buckets = prepare(f"SELECT bucket FROM {k}.chat_buckets WHERE channel_key = ?")
        self.nonempty = prepare(
            f"SELECT period FROM {k}.chat_by_user WHERE channel_key = ? AND user_key = ? AND period IN ? "
            "PER PARTITION LIMIT 1"
        )
        self.bucket_keys = prepare(
            f"SELECT sent_at, message_id FROM {k}.chat_by_channel WHERE channel_key = ? AND bucket = ?"
        )
        self.bucket_rows = prepare(
            f"SELECT sent_at, message_id, line FROM {k}.chat_by_channel WHERE channel_key = ? AND bucket = ?"
        )
        delete = self._delete
        self.delete_bucket = delete("chat_by_channel", "channel_key", "bucket")
        self.delete_range = delete(
            "chat_by_channel",
            "channel_key",
            "bucket",
            then="(sent_at, message_id) >= (?, ?) AND (sent_at, message_id) <= (?, ?)",
        )
        self.delete_row = delete("chat_by_channel", "channel_key", "bucket", "sent_at", "message_id")
        self.delete_pointers = delete("chat_by_user", "channel_key", "user_key", "period")
        self.delete_buckets = delete("chat_buckets", "channel_key")
        self.delete_login_key = delete("user_login_keys", "channel_key", "period", "user_key")
        self.delete_login_keys = delete("user_login_keys", "channel_key", "period")
        self.delete_user_names = delete("user_names", "user_id")
        self.delete_user_login = delete("user_ids_by_login", "user_login", "user_id")
        self.delete_channel_names = delete("channel_names", "channel_id")
        self.delete_channel_login = delete("channel_ids_by_login", "channel", "channel_id")

    @cached_property
    def pointers(self) -> Any:
        """A ``chat_by_user`` partition's rows, with its frame where the month is packed (an older keyspace
        without the column: none)."""
        packed = "packed" if has_column(self.session, self.keyspace, "packed") else "(blob)null AS packed"
        return self.session.prepare(
            f"SELECT sent_at, message_id, {packed} FROM {self.keyspace}.chat_by_user WHERE channel_key = ? "
            "AND user_key = ? AND period = ?"
        )

    def _delete(self, table: str, *columns: str, then: str | None = None) -> Any:
        """``DELETE FROM <table> USING TIMESTAMP ? WHERE <column> = ? AND ...`` (and ``then``), prepared:
        every delete's first value is its write timestamp (:func:`now_us`)."""
        where = [f"{column} = ?" for column in columns]
        if then is not None:
            where.append(then)
        return self.session.prepare(
            f"DELETE FROM {self.keyspace}.{table} USING TIMESTAMP ? WHERE {' AND '.join(where)}"
        )

    def rows(self, statement: Any, values: Sequence[Any]) -> list[Any]:
        return list(self.session.execute(statement, values))

    def many(self, statement: Any, values: Iterable[Sequence[Any]]) -> list[list[Any]]:
        """Run ``statement`` with each of ``values`` (up to :data:`CONCURRENCY` at once); the rows of each."""
        from cassandra.concurrent import execute_concurrent_with_args

        out = []
        for ok, result in execute_concurrent_with_args(
            self.session, statement, list(values), concurrency=CONCURRENCY, raise_on_first_error=True
        ):
            if not ok:  # pragma: no cover - raise_on_first_error raises instead
                raise result
            out.append(list(result) if result is not None else [])
        return out


def erase(
    session: Any,
    keyspace: str,
    *,
    user_id: str | None = None,
    channel_id: str | None = None,
    by: str,
    progress: Progress | None = None,
) -> ErasureReport:
    """Erase a user everywhere (``user_id``), a user in one channel (both), or a whole channel
    (``channel_id``); write the audit row; return what was deleted. Bad ids or Cassandra failing: one
    :class:`~core.errors.ChatlogError` line (what was deleted before a failure stays deleted: run it
    again)."""
    if user_id is None and channel_id is None:
        raise ChatlogError("erase needs a user id, a channel id, or both")
    user_id = check_id("user", user_id) if user_id is not None else None
    channel_id = check_id("channel", channel_id) if channel_id is not None else None
    report = ErasureReport(user_id=user_id, channel_id=channel_id)
    report.at = int(datetime.now(UTC).timestamp() * 1000)
    tell = progress or (lambda _line: None)
    from cassandra import DriverException

    try:
        cql = _Cql(session, keyspace)
        if user_id is not None:
            _erase_user(cql, user_id, channel_id, report, tell)
        else:
            assert channel_id is not None
            _erase_channel(cql, channel_id, report, tell)
        audit.record(
            session,
            keyspace,
            action="erase",
            kind="user" if user_id is not None else "channel",
            id=user_id if user_id is not None else str(channel_id),
            channel=channel_id if user_id is not None else None,
            by=by,
            at=report.at,
            deleted=report.deleted(),
        )
    except DriverException as exc:
        raise ChatlogError(
            f"erasing from keyspace {keyspace} failed after {report.total_rows} row(s): "
            f"{one_line(exc)} (run it again to finish; `chatlog init` creates the tables)"
        ) from None
    return report


# --- a user --------------------------------------------------------------------------------------------


def _erase_user(
    cql: _Cql, user_id: str, channel_id: str | None, report: ErasureReport, tell: Progress
) -> None:
    started = now_us()
    names = cql.rows(cql.user_logins, (user_id,))  # a row per (login, display name)
    logins = sorted({row.user_login for row in names})
    keys = [user_id, *(LOGIN_KEY_PREFIX + login.lower() for login in logins)]
    if channel_id is not None:
        channels = [channel_id, *_channel_login_keys(cql, channel_id)]
    else:
        channels = sorted({row.channel_key for row in cql.session.execute(cql.channel_keys)})
    for channel in channels:
        starts = [epoch_ms(row.bucket) for row in cql.rows(cql.buckets, (channel,))]
        periods = sorted({f(at) for at in starts for f in (user_period, month_period)})
        probes = [
            (channel, key, periods[i : i + PROBE_PERIODS])
            for key in keys
            for i in range(0, len(periods), PROBE_PERIODS)
        ]
        partitions = sorted(
            (channel, key, row.period)
            for (_c, key, _p), rows in zip(probes, cql.many(cql.nonempty, probes), strict=True)
            for row in rows
        )
        read_at = now_us()
        for partition, found in zip(partitions, cql.many(cql.pointers, partitions), strict=True):
            pointers = _pointers(found)
            if not pointers:
                continue
            _delete_payload(cql, channel, pointers, report)
            cql.session.execute(cql.delete_pointers, (read_at, *partition))
            report.rows["chat_by_user"] += len(pointers)
            report.partitions["chat_by_user"] += 1
            tell(f"chat_by_user {partition[0]} {partition[1]} {partition[2]}: {len(pointers)} pointer(s)")
        # the index of the login keys last: the partitions it points to are gone
        indexed = sorted(
            {(read_at, c, month_of(p), k) for c, k, p in partitions if k.startswith(LOGIN_KEY_PREFIX)}
        )
        cql.many(cql.delete_login_key, indexed)
        report.rows["user_login_keys"] += len(indexed)
    if channel_id is None:  # the name history is not per channel
        # its logins' digests first: a sink started later still knows a deleted message naming one
        cql.many(cql.keep_digest, [(user_id, login_digest(login)) for login in logins])
        _delete_names(cql, "user", user_id, logins, len(names), started, report)
        if logins:
            tell(f"user_names {user_id}: {len(names)} name(s)")


def _channel_login_keys(cql: _Cql, channel_id: str) -> list[str]:
    """``login:<login>`` keys of the channel's logins (its lines without a room id)."""
    return sorted(
        {LOGIN_KEY_PREFIX + row.channel.lower() for row in cql.rows(cql.channel_logins, (channel_id,))}
    )


def _pointers(rows: list[Any]) -> list[tuple[int, uuid.UUID]]:
    """(sent_at ms, message id) of every event of a ``chat_by_user`` partition: its rows (not a month's
    statics alone) and the rows of its frame where the month is packed (:mod:`sink.pack`)."""
    found = [(epoch_ms(row.sent_at), row.message_id) for row in rows if row.sent_at is not None]
    packed = rows[0].packed if rows else None
    if packed is not None:
        found += [(row[0], uuid.UUID(row[1])) for row in unpack(packed)]
    return found


def _delete_payload(
    cql: _Cql, channel: str, pointers: list[tuple[int, uuid.UUID]], report: ErasureReport
) -> None:
    """Delete the ``chat_by_channel`` rows ``pointers`` point to, bucket by bucket, in whole runs."""
    by_bucket: dict[int, set[tuple[int, uuid.UUID]]] = defaultdict(set)
    for sent_at, message_id in pointers:
        by_bucket[bucket_of(sent_at)].add((sent_at, message_id))
    buckets = sorted(by_bucket)
    read_at = now_us()
    contents = cql.many(cql.bucket_keys, [(channel, b) for b in buckets])
    for bucket, rows in zip(buckets, contents, strict=True):
        wanted = by_bucket[bucket]
        keys = [(epoch_ms(r.sent_at), r.message_id) for r in rows]
        flags = [k in wanted for k in keys]
        found = sum(flags)
        if not found:
            continue
        report.rows["chat_by_channel"] += found
        if found == len(keys):
            cql.session.execute(cql.delete_bucket, (read_at, channel, bucket))
            report.partitions["chat_by_channel"] += 1
            continue
        deletes: list[tuple[Any, tuple[Any, ...]]] = []
        for start, end in _runs(flags):
            first, last = keys[start], keys[end]
            if start == end:
                deletes.append((cql.delete_row, (read_at, channel, bucket, first[0], first[1])))
            else:
                deletes.append(
                    (cql.delete_range, (read_at, channel, bucket, first[0], first[1], last[0], last[1]))
                )
        for statement, values in deletes:
            cql.session.execute(statement, values)


def _runs(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """(first, last) index of every maximal run of True in ``flags``."""
    out = []
    start: int | None = None
    for i, flag in enumerate(flags):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(flags) - 1))
    return out


# --- a channel -----------------------------------------------------------------------------------------


def row_user_key(line: str, message_id: uuid.UUID, sent_at_ms: int) -> str | None:
    """The ``chat_by_user`` key the sink gave a stored row: its sender's, else (a ban, a timeout, a deleted
    message) its target's, by :func:`consent.rule.whose` as the sink keys it; None for neither."""
    try:
        event = parse_line(restore(line, message_id, sent_at_ms), received_at=sent_at_ms)
    except MalformedLine:
        return None
    if event is None:
        return None
    return user_key(*whose(event))


def _erase_channel(cql: _Cql, channel_id: str, report: ErasureReport, tell: Progress) -> None:
    started = now_us()
    logins = sorted({row.channel for row in cql.rows(cql.channel_logins, (channel_id,))})
    for channel in [channel_id, *(LOGIN_KEY_PREFIX + login.lower() for login in logins)]:
        done: set[tuple[str, int]] = set()
        months: set[int] = set()
        for bucket_row in cql.rows(cql.buckets, (channel,)):
            bucket = epoch_ms(bucket_row.bucket)
            months.add(month_period(bucket))
            read_at = now_us()
            rows = cql.rows(cql.bucket_rows, (channel, bucket))
            users: set[tuple[str, int]] = set()
            for row in rows:
                sent_at = epoch_ms(row.sent_at)
                key = row_user_key(row.line or "", row.message_id, sent_at)
                if key is not None:
                    users.add((key, user_period(sent_at)))
                    users.add((key, month_period(sent_at)))
            new = sorted(users - done)
            cql.many(cql.delete_pointers, [(read_at, channel, key, period) for key, period in new])
            done.update(new)
            report.partitions["chat_by_user"] += len(new)
            if rows:
                cql.session.execute(cql.delete_bucket, (read_at, channel, bucket))
                report.rows["chat_by_channel"] += len(rows)
                report.partitions["chat_by_channel"] += 1
            report.rows["chat_buckets"] += 1
            tell(f"chat_by_channel {channel} {bucket}: {len(rows)} row(s), {len(new)} user partition(s)")
        # the index of the login keys of the channel's months, before the buckets that give its months
        cql.many(cql.delete_login_keys, [(started, channel, month) for month in sorted(months)])
        report.partitions["user_login_keys"] += len(months)
        if report.rows["chat_buckets"] or done:
            cql.session.execute(cql.delete_buckets, (started, channel))  # last: it is what finds the buckets
            report.partitions["chat_buckets"] += 1
    _delete_names(cql, "channel", channel_id, logins, len(logins), started, report)


# --- the name history of either ------------------------------------------------------------------------


def _delete_names(
    cql: _Cql, kind: Kind, id: str, logins: Sequence[str], names: int, at: int, report: ErasureReport
) -> None:
    """The name history of a user or a channel, with the timestamp ``at``: its row of each login in
    ``<kind>_ids_by_login``, then (when it has any login) its ``<kind>_names`` partition of ``names`` rows."""
    if kind == "user":
        by_login, history = cql.delete_user_login, cql.delete_user_names
    else:
        by_login, history = cql.delete_channel_login, cql.delete_channel_names
    for login in logins:
        cql.session.execute(by_login, (at, login, id))
        report.rows[f"{kind}_ids_by_login"] += 1
    if logins:
        cql.session.execute(history, (at, id))
        report.rows[f"{kind}_names"] += names
        report.partitions[f"{kind}_names"] += 1
