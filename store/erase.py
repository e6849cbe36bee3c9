"""Erasure: every stored line of a user (everywhere, or in one channel), or of a whole channel.

How each table is reached (store/cassandra.cql):

* ``user_blocks``: a user's lines, partitions ``(channel_key, user_key, month, part)``, found through
  ``user_months``. The user's keys are its Twitch id and ``login:<login>`` for every login of it in
  ``user_names`` (a deleted message names its user by login only; lines without ids are keyed by login).
  Its channels: the one given (its id and login keys), else every channel key of ``channel_users``. The
  lines include the bans, timeouts and deleted messages that target the user (they are filed under the
  user: :func:`store.keys.filed_under`), and a packed month's: the partition delete removes them all.
* ``channel_blocks``: the same lines in the channel's days. The days of the user's lines (read from its
  blocks first) are scanned; each block holding a line filed under one of the user's keys is written again
  without those lines (none left: only deleted), so a channel's other lines stay as they were.
* ``user_months`` and ``channel_users``: the index rows of the user's partitions, once those are deleted.
* ``user_names`` and ``user_ids_by_login`` when the user is erased everywhere (they are not per channel).
  Before they go, each login's digest is written to ``erased_logins`` (:func:`consent.records.login_digest`):
  a deleted message names its author by login only, and a sink started after the erasure matches such a
  line by the digest.
* A channel: for every key of it, every user of ``channel_users`` (its ``user_blocks`` partitions and
  ``user_months`` rows), then every day of ``channel_days`` (its ``channel_blocks`` partitions), then the
  index partitions, then its name history. The coverage ledger (times an ingester logged it, no chat) stays.

Safe to re-run after a crash at any point: lines are deleted before the index rows that find them (a user's
channel lines before their user partitions, those before ``user_months``; the names last). Each delete
carries as its timestamp the time just before the read that found what it deletes (:func:`now_us`), so what
is written after that read stays: another user's block, a new day of a channel, and equally a replayed line
of the erased user, which is why the sink drops opted-out users and channels before writing. Counts in
:class:`ErasureReport` are of lines (and partitions) found and deleted by this run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from consent import audit
from consent.records import Kind, check_id, login_digest
from core.errors import ChatlogError, one_line
from core.times import naive_utc
from store import frame
from store.blocks import CHANNEL, USER, blocks_of
from store.keys import channel_key, day_of, login_key, user_key
from store.pack import Blocks, Read, read

TABLES: Final = (
    "channel_blocks",
    "user_blocks",
    "channel_days",
    "user_months",
    "channel_users",
    "user_names",
    "user_ids_by_login",
    "channel_names",
    "channel_ids_by_login",
)
"""Every table erasure deletes from, in the order reports list them."""

CONCURRENCY: Final = 32

Progress = Callable[[str], None]
"""Told a short line after each step (a user partition, a day): for a live report, and crash tests."""


@dataclass
class ErasureReport:
    """What an erasure deleted: lines (rows of the other tables) per table, and partitions deleted whole."""

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
    """The write timestamp of a delete (µs): taken before the read whose lines it deletes."""
    return time.time_ns() // 1000


class _Cql:
    """The statements of one keyspace, prepared once."""

    def __init__(self, session: Any, keyspace: str) -> None:
        from store.write import worker_session_of

        self.session = session
        self.keyspace = keyspace
        k = keyspace
        prepare = session.prepare
        self.user_logins = prepare(f"SELECT user_login FROM {k}.user_names WHERE user_id = ?")
        self.channel_logins = prepare(f"SELECT channel FROM {k}.channel_names WHERE channel_id = ?")
        self.keep_digest = prepare(f"INSERT INTO {k}.erased_logins (user_id, digest) VALUES (?, ?)")
        self.all_channels = f"SELECT DISTINCT channel_key FROM {k}.channel_users"
        self.channel_users = prepare(f"SELECT user_key FROM {k}.channel_users WHERE channel_key = ?")
        self.months = prepare(
            f"SELECT month, part FROM {k}.user_months WHERE channel_key = ? AND user_key = ?"
        )
        self.days = prepare(f"SELECT day, part FROM {k}.channel_days WHERE channel_key = ?")
        self.day_parts = prepare(f"SELECT part FROM {k}.channel_days WHERE channel_key = ? AND day = ?")
        delete = self._delete
        self.delete_user_blocks = delete("user_blocks", "channel_key", "user_key", "month", "part")
        self.delete_channel_blocks = delete("channel_blocks", "channel_key", "day", "part")
        self.delete_user_months = delete("user_months", "channel_key", "user_key")
        self.delete_channel_user = delete("channel_users", "channel_key", "user_key")
        self.delete_channel_users = delete("channel_users", "channel_key")
        self.delete_channel_days = delete("channel_days", "channel_key")
        self.delete_user_names = delete("user_names", "user_id")
        self.delete_user_login = delete("user_ids_by_login", "user_login", "user_id")
        self.delete_channel_names = delete("channel_names", "channel_id")
        self.delete_channel_login = delete("channel_ids_by_login", "channel", "channel_id")
        prepared = worker_session_of(session).prepared(keyspace, "LOCAL_QUORUM", 120.0)
        self.channel_blocks = Blocks(session, keyspace, CHANNEL)
        self.channel_blocks.write = prepared
        self.user_blocks = Blocks(session, keyspace, USER)

    def _delete(self, table: str, *columns: str) -> Any:
        where = " AND ".join(f"{column} = ?" for column in columns)
        return self.session.prepare(f"DELETE FROM {self.keyspace}.{table} USING TIMESTAMP ? WHERE {where}")

    def rows(self, statement: Any, values: Sequence[Any]) -> list[Any]:
        return list(self.session.execute(statement, values, timeout=120))

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


def _channel_keys(cql: _Cql, channel_id: str) -> list[str]:
    """A channel's keys: its id's, and ``login:<login>`` of each of its logins (lines without a room id)."""
    logins = sorted({row.channel.lower() for row in cql.rows(cql.channel_logins, (channel_id,))})
    return [channel_key(channel_id, ""), *(login_key(login) for login in logins)]


def _erase_user(
    cql: _Cql, user_id: str, channel_id: str | None, report: ErasureReport, tell: Progress
) -> None:
    started = now_us()
    names = cql.rows(cql.user_logins, (user_id,))  # a row per (login, display name)
    logins = sorted({row.user_login for row in names})
    id_key = user_key(user_id, None)
    assert id_key is not None
    keys = [id_key, *(login_key(login) for login in logins)]
    if channel_id is not None:
        channels = _channel_keys(cql, channel_id)
    else:
        channels = sorted({row.channel_key for row in cql.session.execute(cql.all_channels, timeout=120)})
    mine = frozenset(keys)
    for channel in channels:
        pairs = [(channel, key) for key in keys]
        for (channel_, key), months in zip(pairs, cql.many(cql.months, pairs), strict=True):
            if not months:
                continue
            read_at = now_us()
            partitions = [(channel_, key, row.month, row.part) for row in months]
            days: set[int] = set()
            lines = 0
            for partition in partitions:
                found = read(cql.user_blocks, partition)
                for _first, _block, value, _written, _ttl, _last in found.rows:
                    decoded = frame.decode(value)
                    days.update(day_of(sent) for sent in decoded.sents)
                    lines += len(decoded)
            _scrub_days(cql, channel_, sorted(days), mine, report)
            cql.many(cql.delete_user_blocks, [(read_at, *p) for p in partitions])
            report.rows["user_blocks"] += lines
            report.partitions["user_blocks"] += len(partitions)
            cql.session.execute(cql.delete_user_months, (read_at, channel_, key), timeout=60)
            cql.session.execute(cql.delete_channel_user, (read_at, channel_, key), timeout=60)
            report.partitions["user_months"] += 1
            report.rows["channel_users"] += 1
            tell(f"user_blocks {channel_} {key}: {len(partitions)} partition(s), {lines} line(s)")
    if channel_id is None:  # the name history is not per channel
        cql.many(cql.keep_digest, [(user_id, login_digest(login)) for login in logins])
        _delete_names(cql, "user", user_id, logins, len(names), started, report)
        if logins:
            tell(f"user_names {user_id}: {len(names)} name(s)")


def _scrub_days(
    cql: _Cql, channel: str, days: Sequence[int], mine: frozenset[str], report: ErasureReport
) -> None:
    """Every block of ``channel``'s ``days`` that holds a line filed under one of the keys ``mine`` written
    again without them (a block left empty only deleted)."""
    blocks = cql.channel_blocks
    for day, parts in zip(days, cql.many(cql.day_parts, [(channel, d) for d in days]), strict=True):
        for row in parts:
            key = (channel, day, row.part)
            found = read(blocks, key)
            for one in found.rows:
                dropped = _rewrite_block(blocks, key, one, mine)
                report.rows["channel_blocks"] += dropped


def _rewrite_block(blocks: Blocks, key: tuple[Any, ...], row: Any, mine: frozenset[str]) -> int:
    """One block of ``key`` without the lines filed under ``mine``; the lines dropped."""
    from cassandra.query import BatchStatement, BatchType

    from store.blocks import Framed
    from store.keys import line_order
    from store.write import block_statement

    first_ms, block_id, value, written, ttl, _last = row
    decoded = frame.decode(value)
    whos = decoded.whos or [None] * len(decoded)
    drop = [i for i, who in enumerate(whos) if who in mine]
    if not drop:
        return 0
    dropped = set(drop)
    kept = [
        Framed(line, key[0], line[5], line_order(line[0], line[1]))
        for i, line in enumerate(decoded.lines(range(len(decoded))))
        if i not in dropped
    ]
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    if kept:
        cell = (ttl or 0).to_bytes(4, "big", signed=True)
        for new in blocks_of(CHANNEL, key, kept):
            batch.add(block_statement(blocks.write, new, cell))
    batch.add(blocks.delete, (written, *key, naive_utc(first_ms), block_id))
    blocks.session.execute(batch, timeout=120)
    return len(drop)


# --- a channel -----------------------------------------------------------------------------------------


def _erase_channel(cql: _Cql, channel_id: str, report: ErasureReport, tell: Progress) -> None:
    started = now_us()
    logins = sorted({row.channel for row in cql.rows(cql.channel_logins, (channel_id,))})
    for channel in [channel_key(channel_id, ""), *(login_key(login) for login in logins)]:
        read_at = now_us()
        users = [row.user_key for row in cql.rows(cql.channel_users, (channel,))]
        pairs = [(channel, user) for user in users]
        for (channel_, user), months in zip(pairs, cql.many(cql.months, pairs), strict=True):
            partitions = [(read_at, channel_, user, row.month, row.part) for row in months]
            cql.many(cql.delete_user_blocks, partitions)
            report.partitions["user_blocks"] += len(partitions)
            cql.session.execute(cql.delete_user_months, (read_at, channel_, user), timeout=60)
            report.partitions["user_months"] += 1
        days = cql.rows(cql.days, (channel,))
        for row in days:
            found: Read = read(cql.channel_blocks, (channel, row.day, row.part))
            report.rows["channel_blocks"] += sum(len(frame.decode(r[2])) for r in found.rows)
        cql.many(cql.delete_channel_blocks, [(read_at, channel, row.day, row.part) for row in days])
        report.partitions["channel_blocks"] += len(days)
        if users:
            cql.session.execute(cql.delete_channel_users, (read_at, channel), timeout=60)
            report.partitions["channel_users"] += 1
        if days:
            cql.session.execute(
                cql.delete_channel_days, (read_at, channel), timeout=60
            )  # last: it finds the days
            report.partitions["channel_days"] += 1
        tell(f"channel_blocks {channel}: {len(days)} day partition(s), {len(users)} user(s)")
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
        cql.session.execute(by_login, (at, login, id), timeout=60)
        report.rows[f"{kind}_ids_by_login"] += 1
    if logins:
        cql.session.execute(history, (at, id), timeout=60)
        report.rows[f"{kind}_names"] += names
        report.partitions[f"{kind}_names"] += 1
