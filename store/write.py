"""Writing lines into the keyspace: blocks, the indexes that find them, and the name history.

The one way lines are written (the streaming sink's tasks, a backfill, a fill, a migration): a
:class:`TaskWrite` takes events (:meth:`TaskWrite.add`), then :meth:`TaskWrite.finish` frames each
partition's lines into blocks (:mod:`store.blocks`), sends them with the index rows and name rows not
written lately by this process, waits for every request (retried while Cassandra fails), and remembers
what it wrote (:class:`Caches`: one per process, shared by its tasks).

* One session per process (:func:`worker_session`), its statements prepared once per keyspace
  (:class:`Prepared`), values bound as the cells they are on the wire (no second serialization).
* Index rows (``channel_days``, ``user_months``, ``channel_users``, and a user's month's part beyond 0
  named in its part 0, ``parts``) are written about once per
  :attr:`Caches.index_refresh_s` per process, with a TTL that much longer than the blocks' (0: none), so an
  index row never expires before the blocks it finds.
* The name history (``user_names``, ``user_ids_by_login``, ``channel_names``, ``channel_ids_by_login``):
  a name at most once per hour of event time per process (:class:`NameCache`); each row's ``first_seen``
  and ``last_seen`` written by its own statement at ``-(event time)`` and ``+(event time)`` as write
  timestamp, so any order of events converges on the earliest and latest.
* Parts: a process that has written :data:`store.keys.PART_BYTES` of blocks into part 0 of a period
  writes the rest of it into the period's smaller parts (:class:`PartGuard`).
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from store import frame
from store.blocks import CHANNEL, USER, Block, Framed, Table, blocks_of, framed, partitions
from store.keys import PART_BYTES as DEFAULT_PART_BYTES
from store.keys import channel_part, user_part
from store.requests import (
    BatchLimits,
    ConcurrentExecutor,
    Item,
    Reject,
    plan_batches,
    retry_failed,
    with_retry,
)

if TYPE_CHECKING:
    from core.settings import CassandraSettings
    from schemas.chat_event import ChatEvent

HOUR_MS: Final = 3_600_000
MAX_DISPLAY_NAME_CHARS: Final = 200
"""A display name longer than this (never on Twitch: 25 characters) is stored as "" (a clustering column)."""
INDEX_ROW_BYTES: Final = 64
BLOCK_TABLES: Final[dict[Table, str]] = {CHANNEL: "channel_blocks", USER: "user_blocks"}
INDEX_TABLES: Final = ("channel_days", "user_months", "channel_users")
NAME_TABLES: Final[dict[str, tuple[str, ...]]] = {
    "user_names": ("user_id", "user_login", "display_name"),
    "user_ids_by_login": ("user_login", "user_id"),
    "channel_names": ("channel_id", "channel"),
    "channel_ids_by_login": ("channel", "channel_id"),
}
"""The name-history tables -> their key columns, in the order they are bound."""

_INT32 = struct.Struct(">i").pack
_INT64 = struct.Struct(">q").pack
_ONE_INT = struct.Struct(">iii").pack
"""A set of one int as a cell: its size, the element's length (4), the element."""
PARTS: Final = "user_parts"
"""The index row that names a part beyond 0 of a user's month in its part 0 (the static ``parts``)."""


# -- what a process wrote lately ---------------------------------------------------------------------


class IndexCache:
    """Index rows this process wrote lately (added only once the write succeeded)."""

    def __init__(self, refresh_s: float = 300.0, max_entries: int = 500_000) -> None:
        self.refresh_s = refresh_s
        self._max = max_entries
        self._written: dict[Hashable, float] = {}

    def fresh(self, key: Hashable, now: float) -> bool:
        written = self._written.get(key)
        return written is not None and now - written < self.refresh_s

    def add(self, keys: Iterable[Hashable], when: float) -> None:
        if len(self._written) > self._max:
            self._written.clear()
        self._written.update(dict.fromkeys(keys, when))

    def ttl(self, ttl_s: int) -> int:
        return ttl_s + int(self.refresh_s) if ttl_s else 0


HourSpan = tuple[int, int]


class NameCache:
    """Names this process wrote, with the span of hours of event time it wrote them for: an event of hour
    ``h`` needs no write when the name was written for an hour ``<= h`` and one ``>= h`` (``first_seen`` and
    ``last_seen`` keep the earliest and latest time written, so each stays within the hour of the true
    first and last). Starts over past ``max_entries`` (those names are written once more)."""

    def __init__(self, max_entries: int = 300_000) -> None:
        self._max = max_entries
        self._spans: dict[Hashable, HourSpan] = {}

    def covers(self, key: Hashable, hour: int) -> bool:
        span = self._spans.get(key)
        return span is not None and span[0] <= hour <= span[1]

    def add(self, written: dict[Hashable, HourSpan]) -> None:
        if len(self._spans) > self._max:
            self._spans.clear()
        spans = self._spans
        for key, (lo, hi) in written.items():
            old = spans.get(key)
            spans[key] = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))

    @staticmethod
    def ttl(ttl_s: int) -> int:
        """A name row outlives the blocks of the events that wrote it by an hour (0: no expiry)."""
        return ttl_s + HOUR_MS // 1000 if ttl_s else 0


class PartGuard:
    """Bytes of blocks this process wrote into part 0 of each period (starts over past ``max_entries``:
    a period may then get up to the bound again, which the bound counts among its writers)."""

    def __init__(self, part_bytes: int = DEFAULT_PART_BYTES, max_entries: int = 1_000_000) -> None:
        self.part_bytes = part_bytes
        self._max = max_entries
        self._bytes: dict[Hashable, int] = {}

    def full(self, key: Hashable) -> bool:
        return self._bytes.get(key, 0) >= self.part_bytes

    def add(self, key: Hashable, nbytes: int) -> None:
        if len(self._bytes) >= self._max and key not in self._bytes:
            self._bytes.clear()
        self._bytes[key] = self._bytes.get(key, 0) + nbytes


@dataclass
class Caches:
    """What one process wrote lately (every task of a Spark Python worker shares its process's)."""

    index: IndexCache = field(default_factory=IndexCache)
    names: NameCache = field(default_factory=NameCache)
    parts: PartGuard = field(default_factory=PartGuard)
    consent: Hashable = None

    def consent_is(self, state: Hashable) -> None:
        """The opt-outs are now ``state``: when they changed, forget the index and name rows written (an
        erasure may have deleted them: a lifted user's next lines write them again)."""
        if state != self.consent:
            self.consent = state
            self.index = IndexCache(self.index.refresh_s)
            self.names = NameCache()


PROCESS_CACHES = Caches()


# -- the statements --------------------------------------------------------------------------------------


class Prepared:
    """The prepared inserts of one keyspace."""

    def __init__(self, session: Any, keyspace: str, consistency: str) -> None:
        from cassandra import ConsistencyLevel

        level = ConsistencyLevel.name_to_value[consistency]

        def prepare(cql: str) -> Any:
            statement = session.prepare(cql)
            statement.is_idempotent = True
            statement.consistency_level = level
            return statement

        self.consistency_level = level
        self.blocks = {
            table: prepare(
                f"INSERT INTO {keyspace}.{name} ({_block_columns(table)}) "
                f"VALUES ({', '.join('?' for _ in _BLOCK_COLUMNS[table])}) USING TTL ?"
            )
            for table, name in BLOCK_TABLES.items()
        }
        self.index = {
            "channel_days": prepare(
                f"INSERT INTO {keyspace}.channel_days (channel_key, day, part) VALUES (?, ?, ?) USING TTL ?"
            ),
            "user_months": prepare(
                f"INSERT INTO {keyspace}.user_months (channel_key, user_key, month, part) "
                "VALUES (?, ?, ?, ?) USING TTL ?"
            ),
            "channel_users": prepare(
                f"INSERT INTO {keyspace}.channel_users (channel_key, user_key) VALUES (?, ?) USING TTL ?"
            ),
            PARTS: prepare(  # part 0's static `parts` gains a part (store/cassandra.cql); cells: _part_cells
                f"UPDATE {keyspace}.user_blocks USING TTL ? SET parts = parts + ? WHERE channel_key = ? AND "
                "user_key = ? AND month = ? AND part = ?"
            ),
        }
        self.names: dict[str, tuple[Any, Any]] = {}
        for table, columns in NAME_TABLES.items():
            first, last = (
                prepare(
                    f"INSERT INTO {keyspace}.{table} ({', '.join((*columns, column))}) "
                    f"VALUES ({', '.join('?' for _ in range(len(columns) + 1))}) USING TIMESTAMP ? AND TTL ?"
                )
                for column in ("first_seen", "last_seen")
            )
            self.names[table] = (first, last)


_BLOCK_COLUMNS: Final[dict[Table, tuple[str, ...]]] = {
    CHANNEL: ("channel_key", "day", "part", "first_at", "block", "last_at", "lines", "frame"),
    USER: ("channel_key", "user_key", "month", "part", "first_at", "block", "last_at", "lines", "frame"),
}


def _block_columns(table: Table) -> str:
    return ", ".join(_BLOCK_COLUMNS[table])


def _bound(statement: Any, cells: list[Any]) -> Any:
    """A bound statement of cells already serialized (``BoundStatement.bind`` would serialize again)."""
    from cassandra.query import BoundStatement

    bound = BoundStatement(statement)
    bound.values = cells
    bound.raw_values = cells  # for the driver's str(): errors name the statement
    return bound


def _key_cells(key: tuple[Any, ...]) -> list[bytes]:
    return [k.encode("utf-8") if isinstance(k, str) else _INT32(k) for k in key]


def block_statement(prepared: Prepared, block: Block, ttl: bytes) -> Any:
    """The bound insert of ``block``."""
    cells = [
        *_key_cells(block.key),
        _INT64(block.first_at),
        block.block.bytes,
        _INT64(block.last_at),
        _INT32(block.lines),
        block.frame,
        ttl,
    ]
    return _bound(prepared.blocks[block.table], cells)


# -- sessions --------------------------------------------------------------------------------------------


class WorkerSession:
    """A Cassandra session with the writers' prepared statements, per keyspace."""

    @classmethod
    def of(cls, session: Any) -> WorkerSession:
        """A writer's session over an open one (a command's: a migration, a pack)."""
        self = cls.__new__(cls)
        self._adopt(session.cluster, session)
        return self

    def _adopt(self, cluster: Any, session: Any) -> None:
        self.cluster, self.session = cluster, session
        self._single_host = len(cluster.metadata.all_hosts()) == 1
        self._replicas: dict[bytes, Hashable] = {}
        self._prepared: dict[tuple[str, str], Prepared] = {}
        self._lock = threading.Lock()

    def __init__(self, settings: CassandraSettings, retry_s: float, timeout_s: float) -> None:
        from cassandra.policies import ExponentialReconnectionPolicy

        from core.cql import connect, one_line_driver_logs

        kwargs: dict[str, Any] = {"reconnection_policy": ExponentialReconnectionPolicy(0.5, 8.0)}
        try:
            from cassandra.io.libevreactor import LibevConnection

            kwargs["connection_class"] = LibevConnection
        except ImportError:  # pragma: no cover - the driver's default reactor
            pass
        one_line_driver_logs()
        where = f"connecting to Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port}"
        # native protocol v4: v5 checksums every frame with CRC32, for nothing TCP does not check on a LAN
        cluster, session = with_retry(
            where, retry_s, lambda: connect(settings, timeout=timeout_s, protocol_version=4, **kwargs)
        )
        self._adopt(cluster, session)

    def prepared(self, keyspace: str, consistency: str, retry_s: float) -> Prepared:
        with self._lock:
            key = (keyspace, consistency)
            if key not in self._prepared:
                self._prepared[key] = with_retry(
                    f"preparing the inserts of keyspace {keyspace}",
                    retry_s,
                    lambda: Prepared(self.session, keyspace, consistency),
                )
            return self._prepared[key]

    def replicas(self, keyspace: str, routing_key: bytes) -> Hashable:
        """The replicas owning the partition of ``routing_key`` (what batches are grouped by)."""
        if self._single_host:
            return ()
        found = self._replicas.get(routing_key)
        if found is None:
            hosts = self.cluster.metadata.get_replicas(keyspace, routing_key)
            found = tuple(sorted(str(h.endpoint) for h in hosts))
            if len(self._replicas) > 100_000:
                self._replicas.clear()
            self._replicas[routing_key] = found
        return found

    def shutdown(self) -> None:
        self.cluster.shutdown()


_SESSIONS: dict[Hashable, WorkerSession] = {}
_SESSIONS_LOCK = threading.Lock()


def worker_session(
    settings: CassandraSettings, retry_s: float = 120.0, timeout_s: float = 10.0
) -> WorkerSession:
    """This process's session for the cluster of ``settings`` (created on first use)."""
    key = (
        settings.cassandra_hosts,
        settings.cassandra_port,
        settings.cassandra_username,
        settings.cassandra_local_dc,
    )
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = _SESSIONS[key] = WorkerSession(settings, retry_s, timeout_s)
        return session


def worker_session_of(session: Any) -> WorkerSession:
    """:meth:`WorkerSession.of` (a command's open session)."""
    return WorkerSession.of(session)


def close_sessions() -> None:
    """Shut down every cached session (tests, the end of a process)."""
    with _SESSIONS_LOCK:
        for session in _SESSIONS.values():
            session.shutdown()
        _SESSIONS.clear()


# -- one task's writes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteOptions:
    """How a task writes: consistency, TTL, concurrency, batching, retries, and the frames' level."""

    keyspace: str
    consistency: str = "LOCAL_QUORUM"
    ttl_s: int = 0
    concurrency: int = 32
    limits: BatchLimits = field(default_factory=BatchLimits)
    retry_s: float = 120.0
    timeout_s: float = 10.0
    level: int = frame.LIVE_LEVEL


@dataclass
class Written:
    """What a task wrote: events, rows per table, requests, retries."""

    events: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    retries: int = 0


def user_name(event: ChatEvent) -> tuple[str, str, str] | None:
    """(user id, login, display name or "") of an event with both a ``user_id`` and a login, else None."""
    user_id, login = event.user_id, event.user_login
    if not user_id or not login:
        return None
    display = event.display_name or ""
    return user_id, login, display if len(display) <= MAX_DISPLAY_NAME_CHARS else ""


def channel_name(event: ChatEvent) -> tuple[str, str] | None:
    """(channel id, channel login) of an event with a ``channel_id``, else None."""
    return (event.channel_id, event.channel) if event.channel_id else None


class TaskWrite:
    """One task's writes into one keyspace (see the module doc)."""

    def __init__(
        self,
        session: WorkerSession,
        options: WriteOptions,
        caches: Caches = PROCESS_CACHES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._options = options
        self._prepared = session.prepared(options.keyspace, options.consistency, options.retry_s)
        self._caches = caches
        self._started = clock()
        self._items: list[Framed] = []
        self._ready: list[Block] = []
        self._names: dict[Hashable, tuple[str, tuple[str, ...], int, int]] = {}
        """(table, key) -> (table, key values, first ms, last ms) of the name rows to write."""
        self.written = Written()

    def add(self, event: ChatEvent, origin: Any = None, mid: bytes | None = None) -> None:
        """Take ``event`` and its name rows (``mid``: its message uuid's bytes, when the caller has them);
        ValueError (nothing taken) for a value Cassandra cannot hold."""
        item = framed(event, origin, mid)
        for part in (item.channel_key, item.user_key or ""):
            if len(part.encode("utf-8")) > 65_535:
                raise ValueError("a key part is longer than 64 KiB")
        self._items.append(item)
        self._names_of(event)
        self.written.events += 1

    def add_names(self, event: ChatEvent) -> None:
        """Take ``event``'s name rows only (its lines are written elsewhere: a backfill's blocks)."""
        self._names_of(event)

    def _names_of(self, event: ChatEvent) -> None:
        hour = event.sent_at // HOUR_MS
        cache = self._caches.names
        user, channel = user_name(event), channel_name(event)
        if user is not None and not cache.covers(("u", user), hour):
            self._name("user_names", user, event.sent_at)
            self._name("user_ids_by_login", (user[1], user[0]), event.sent_at)
        if channel is not None and not cache.covers(("c", channel), hour):
            self._name("channel_names", channel, event.sent_at)
            self._name("channel_ids_by_login", (channel[1], channel[0]), event.sent_at)

    def _name(self, table: str, key: tuple[str, ...], sent_at: int) -> None:
        found = self._names.get((table, key))
        if found is None:
            self._names[(table, key)] = (table, key, sent_at, sent_at)
        else:
            self._names[(table, key)] = (table, key, min(found[2], sent_at), max(found[3], sent_at))

    def _part_of(self, table: Table, key: tuple[Any, ...]) -> Callable[[int], int] | None:
        if not self._caches.parts.full((self._options.keyspace, table, key)):
            return None
        return channel_part if table == CHANNEL else user_part

    def add_blocks(self, blocks: Iterable[Block]) -> None:
        """Take blocks framed elsewhere (a migration, a pack): written as they are, with their index rows."""
        self._ready.extend(blocks)

    def blocks(self) -> list[Block]:
        """The blocks to write: those given, and those of the events added (each partition's lines framed)."""
        level = self._options.level
        out: list[Block] = list(self._ready)
        for (table, key), items in partitions(self._items, self._part_of).items():
            out += blocks_of(table, key, items, level=level)
        return out

    def finish(self, reject: Reject | None = None) -> Written:
        """Write every block, index row and name row taken since the last call; wait (retrying while
        Cassandra fails; what it rejects as invalid goes to ``reject`` with the origins of its lines), then
        remember what was written. Returns what the task wrote so far (every call's)."""
        options, prepared, caches = self._options, self._prepared, self._caches
        ttl_s = options.ttl_s
        data_ttl = _INT32(ttl_s)
        index_ttl = _INT32(caches.index.ttl(ttl_s))
        names_ttl = _INT32(caches.names.ttl(ttl_s))
        keyspace = options.keyspace
        items: list[Item] = []
        rows = self.written.rows
        new_index: dict[Hashable, None] = {}
        blocks = self.blocks()
        for block in blocks:
            bound = block_statement(prepared, block, data_ttl)
            table = BLOCK_TABLES[block.table]
            items.append(self._item(table, bound, len(block.frame) + 64, block.origins))
            rows[table] = rows.get(table, 0) + 1
            for index, values in _index_rows(block):
                cache_key = (keyspace, index, values)
                if cache_key in new_index or caches.index.fresh(cache_key, self._started):
                    continue
                new_index[cache_key] = None
                cells = (_part_cells if index == PARTS else _insert_cells)(values, index_ttl)
                bound = _bound(prepared.index[index], cells)
                items.append(self._item(index, bound, INDEX_ROW_BYTES, ()))
                rows[index] = rows.get(index, 0) + 1
        for table, key, first_ms, last_ms in self._names.values():
            first, last = prepared.names[table]
            cells = [k.encode("utf-8") for k in key]
            for statement, at, stamp in (
                (first, first_ms, -first_ms * 1000),
                (last, last_ms, last_ms * 1000),
            ):
                bound = _bound(statement, [*cells, _INT64(at), _INT64(stamp), names_ttl])
                items.append(self._item(table, bound, INDEX_ROW_BYTES, ()))
                rows[table] = rows.get(table, 0) + 1
        executor = ConcurrentExecutor(self._session.session, options.concurrency, options.timeout_s)
        for batch in plan_batches(items, options.limits):
            _submit(executor, batch, prepared.consistency_level)
        self.written.retries += retry_failed(executor, executor.drain(), options.retry_s, reject=reject)
        self.written.requests += executor.requests
        caches.index.add(new_index, self._started)
        names: dict[Hashable, HourSpan] = {}
        for table, key, first_ms, last_ms in self._names.values():
            name_key = (
                ("u", key) if table == "user_names" else ("c", key) if table == "channel_names" else None
            )
            if name_key is not None:
                names[name_key] = (first_ms // HOUR_MS, last_ms // HOUR_MS)
        caches.names.add(names)
        for block in blocks:
            if block.key[-1] == 0:
                caches.parts.add((keyspace, block.table, block.key[:-1]), len(block.frame))
        self._items, self._names, self._ready = [], {}, []
        return self.written

    def _item(self, table: str, bound: Any, size: int, origins: Sequence[Any]) -> Item:
        routing_key = bound.routing_key
        where = self._session.replicas(self._options.keyspace, routing_key)
        return Item(where, (table, routing_key), size, bound, origins)


def _insert_cells(key: tuple[Any, ...], ttl: bytes) -> list[bytes]:
    """The cells of an index row's insert: its key, then its TTL."""
    return [*_key_cells(key), ttl]


def _part_cells(key: tuple[Any, ...], ttl: bytes) -> list[bytes]:
    """The cells of :data:`PARTS`' update of part ``key[-1]`` of a month: its TTL, the set of that one part,
    the key of the month's part 0."""
    *month, part = key
    return [ttl, _ONE_INT(1, 4, part), *_key_cells((*month, 0))]


def _index_rows(block: Block) -> list[tuple[str, tuple[Any, ...]]]:
    if block.table == CHANNEL:
        return [("channel_days", block.key)]
    channel_key, user_key = block.key[0], block.key[1]
    rows = [("user_months", block.key), ("channel_users", (channel_key, user_key))]
    return rows if block.key[-1] == 0 else [(PARTS, block.key), *rows]


def _submit(executor: ConcurrentExecutor, batch: list[Item], consistency_level: Any) -> None:
    if len(batch) == 1:
        executor.submit(batch[0].statement, batch)
        return
    from cassandra.query import BatchStatement, BatchType

    statement = BatchStatement(batch_type=BatchType.UNLOGGED, consistency_level=consistency_level)
    for item in batch:
        statement.add(item.statement)
    statement.is_idempotent = True
    executor.submit(statement, batch)
