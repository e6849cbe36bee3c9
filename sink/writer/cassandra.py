"""Writing rows to Cassandra with cassandra-driver, from a Spark Python worker (or any process).

* One entry point, :func:`writer`: a :class:`CassandraWriter` for one task.
* One session per Python worker (:func:`worker_session`), reused by every task the worker runs.
* Prepared ``INSERT ... USING TTL ?`` per table, columns taken from the live table metadata; the name
  history's two inserts per table (:class:`PreparedNames`: ``first_seen`` and ``last_seen``, each with
  its own ``USING TIMESTAMP``).
* Token-aware unlogged batches (:func:`plan_batches`): statements are grouped by the replicas that own
  their partition, then packed: rows of one partition together, at most ``max_partitions`` partitions
  and about ``max_bytes`` per batch. A batch is routed (TokenAwarePolicy) to a replica that owns every
  partition in it, so Cassandra does the work of many single inserts for the price of one request.
* A bounded window of concurrent requests (:class:`ConcurrentExecutor`), and failed requests retried
  with exponential backoff until ``retry_s`` has passed since the first failure; then
  :class:`CassandraWriteError`, which fails the micro-batch and so the query, loudly. Every write is
  idempotent (the primary keys contain message_id), so retrying and re-running a batch is safe.
* A request Cassandra rejects as invalid (``InvalidRequest``, error code 0x2200: a key past 64 KiB, a
  batch too large, ...) is never retried: it would fail the same way for ``retry_s``, fail the query,
  and the restarted query would replay the same record: a crash loop. A rejected batch is split into
  its statements, re-sent at once one by one, and a statement rejected on its own is handed to the
  caller's ``reject`` with its items (the writer dead-letters their records). A rejection that names
  the schema (a table, keyspace or column that does not exist) is no record's fault: it fails loudly.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.cql import CassandraLoginError
from core.errors import one_line
from schemas.cql import user_period
from sink.writer.cql_cells import cql_name, encoder
from sink.writer.rows import NAME_TABLES, TABLES, EventRows, SchemaMismatch, TableRows

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent
    from sink.settings import SinkSettings

log = logging.getLogger(__name__)


class CassandraWriteError(RuntimeError):
    """Cassandra kept failing for longer than the retry bound."""


@dataclass(frozen=True)
class BatchLimits:
    max_rows: int = 100
    max_partitions: int = 60
    max_bytes: int = 48 * 1024


@dataclass(slots=True)
class Item:
    """One statement to write: ``replicas`` owning ``partition`` (table, routing key), approximate
    payload ``size``, and the ``origin`` it came from (what to dead-letter if Cassandra rejects it).

    A slotted, not frozen, dataclass: a frozen one sets each field through ``object.__setattr__``,
    which makes each instance several times dearer to build, and the writer builds two or three of these
    per event (``chatlog bench sink``'s raw insert measures the writer's CPU per event).
    """

    replicas: Hashable
    partition: tuple[str, bytes]
    size: int
    statement: Any
    origin: Any = None


Failure = tuple[Any, BaseException, Sequence[Item]]
"""A failed request: the statement, the error, and the items it carried."""
Reject = Callable[[Sequence[Item], BaseException], None]
_SCHEMA_ERRORS = ("does not exist", "unconfigured table", "undefined column", "unknown identifier")


def is_invalid(exc: BaseException) -> bool:
    """Whether Cassandra rejected the request as invalid (``InvalidRequest``, code 0x2200)."""
    from cassandra import InvalidRequest

    return isinstance(exc, InvalidRequest)


def plan_batches(items: Sequence[Item], limits: BatchLimits) -> list[list[Item]]:
    """Pack ``items`` into batches that each go to one replica set, within ``limits``."""
    groups: dict[Hashable, list[Item]] = {}
    for item in items:
        groups.setdefault(item.replicas, []).append(item)
    batches: list[list[Item]] = []
    for group in groups.values():
        group.sort(key=lambda i: i.partition)
        current: list[Item] = []
        size = 0
        partitions = 0
        for item in group:
            new_partition = not current or current[-1].partition != item.partition
            if current and (
                len(current) >= limits.max_rows
                or size + item.size > limits.max_bytes
                or (new_partition and partitions >= limits.max_partitions)
            ):
                batches.append(current)
                current, size, partitions = [], 0, 0
                new_partition = True
            current.append(item)
            size += item.size
            partitions += new_partition
        if current:
            batches.append(current)
    return batches


class ConcurrentExecutor:
    """Runs statements with at most ``concurrency`` in flight; collects the ones that failed."""

    def __init__(self, session: Any, concurrency: int, timeout_s: float) -> None:
        self._session = session
        self._timeout_s = timeout_s
        self._window = threading.BoundedSemaphore(concurrency)
        self._cond = threading.Condition()
        self._in_flight = 0
        self._failed: list[Failure] = []
        self.requests = 0

    def submit(self, statement: Any, items: Sequence[Item] = ()) -> None:
        """Send ``statement`` (carrying ``items``, handed back if it fails)."""
        self._window.acquire()
        with self._cond:
            self._in_flight += 1
        self.requests += 1
        try:
            future = self._session.execute_async(statement, timeout=self._timeout_s)
        except Exception as exc:
            self._on_error(exc, statement, items)
            return
        future.add_callbacks(self._on_done, self._on_error, errback_args=(statement, items))

    def _on_done(self, _result: Any) -> None:
        self._finish()

    def _on_error(self, exc: BaseException, statement: Any, items: Sequence[Item]) -> None:
        with self._cond:
            self._failed.append((statement, exc, items))
        self._finish()

    def _finish(self) -> None:
        self._window.release()
        with self._cond:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._cond.notify_all()

    def drain(self) -> list[Failure]:
        """Wait for every request in flight; return (and forget) the failed ones."""
        with self._cond:
            while self._in_flight:
                self._cond.wait()
            failed, self._failed = self._failed, []
        return failed


def settle_invalid(
    executor: ConcurrentExecutor, failed: list[Failure], reject: Reject | None
) -> list[Failure]:
    """Take the requests Cassandra rejected as invalid out of ``failed``, never to be retried: a batch
    is split and its statements re-sent at once, one by one; a statement rejected on its own goes to
    ``reject`` with its items. Returns the other failures (to retry). Raises
    :class:`CassandraWriteError` for a rejection of the schema, or when there is no ``reject``."""
    while True:
        invalid = [f for f in failed if is_invalid(f[1])]
        if not invalid:
            return failed
        failed = [f for f in failed if not is_invalid(f[1])]
        split = False
        for _statement, exc, items in invalid:
            reason = one_line(exc, 300, typed=True)
            if len(items) > 1:
                log.warning(
                    "Cassandra rejected a batch of %d as invalid (%s): writing each alone", len(items), reason
                )
                for item in items:
                    executor.submit(item.statement, (item,))
                split = True
            elif reject is None or not items or any(e in reason.lower() for e in _SCHEMA_ERRORS):
                where = f" to {items[0].partition[0]}" if items else ""
                raise CassandraWriteError(f"Cassandra rejected a write{where} as invalid: {reason}")
            else:
                reject(items, exc)
        if not split:
            return failed
        failed += executor.drain()


def retry_failed(
    executor: ConcurrentExecutor,
    failed: list[Failure],
    retry_s: float,
    *,
    reject: Reject | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Re-run ``failed`` statements with exponential backoff until they succeed; returns how many
    re-tries it took. Raises :class:`CassandraWriteError` once ``retry_s`` has passed. What Cassandra
    rejects as invalid is not retried (:func:`settle_invalid`)."""
    start = clock()
    delay = 0.25
    retries = 0
    while failed:
        failed = settle_invalid(executor, failed, reject)
        if not failed:
            break
        elapsed = clock() - start
        if elapsed >= retry_s:
            raise CassandraWriteError(
                f"{len(failed)} Cassandra write(s) still failing after {retry_s:g}s of retries "
                f"(CHATLOG_SINK_CASSANDRA_RETRY_S); last error: {one_line(failed[-1][1], 300, typed=True)}"
            )
        log.warning(
            "%d Cassandra write(s) failed (%s); retrying in %.2fs",
            len(failed),
            one_line(failed[-1][1], 300, typed=True),
            delay,
        )
        sleep(min(delay, retry_s - elapsed))
        delay = min(delay * 2, 8.0)
        retries += len(failed)
        for statement, _exc, items in failed:
            executor.submit(statement, items)
        failed = executor.drain()
    return retries


def with_retry(what: str, retry_s: float, attempt: Callable[[], Any]) -> Any:
    """``attempt()`` until it succeeds, with exponential backoff, for at most ``retry_s``."""
    start = time.monotonic()
    delay = 0.25
    while True:
        try:
            return attempt()
        except CassandraLoginError:
            raise  # a refused login does not get better by retrying: one line at once
        except Exception as exc:
            elapsed = time.monotonic() - start
            if elapsed >= retry_s:
                raise CassandraWriteError(
                    f"{what} still failing after {retry_s:g}s "
                    f"(CHATLOG_SINK_CASSANDRA_RETRY_S): {one_line(exc, 300, typed=True)}"
                ) from None
            log.warning("%s failed (%s); retrying in %.2fs", what, one_line(exc, 300, typed=True), delay)
            time.sleep(min(delay, retry_s - elapsed))
            delay = min(delay * 2, 8.0)


class PreparedTable:
    """A table's prepared ``INSERT ... USING TTL ?`` and how its row is taken from an event."""

    def __init__(self, rows: TableRows, statement: Any) -> None:
        self.rows = rows
        self.statement = statement

    def bind(self, cells: Sequence[Any], ttl: bytes) -> Any:
        """A bound insert of serialized ``cells`` (in ``rows.columns`` order) and the TTL cell.

        ``BoundStatement.bind`` would serialize again, and look up a column encryption policy per
        value; the cells are already what goes on the wire.
        """
        from cassandra.query import BoundStatement

        bound = BoundStatement(self.statement)
        bound.values = [*cells, ttl]
        bound.raw_values = bound.values  # for the driver's str(): errors name the statement
        return bound


_INT64 = struct.Struct(">q").pack
_INT32 = struct.Struct(">i").pack


class PreparedNames:
    """The name history's inserts (``user_names``, ``user_ids_by_login``, ``channel_names``,
    ``channel_ids_by_login``): per table, one statement writing ``first_seen`` and one ``last_seen``.

    Neither reads before it writes. Both cells hold the event's time; the statement's write timestamp
    (``USING TIMESTAMP``, microseconds) decides which write a cell keeps, the highest: ``last_seen`` is
    written at +(event time), so the latest event wins; ``first_seen`` at -(event time), so the earliest
    wins. Replays and out-of-order events settle on the same cells in any order (a tie is the same value).
    One statement has one timestamp, hence two statements per row; Cassandra accepts each with its own
    timestamp in an unlogged batch (the batch itself sets none: the driver's client-side timestamp is
    only the default of statements without ``USING TIMESTAMP``).
    """

    def __init__(self, first: dict[str, Any], last: dict[str, Any]) -> None:
        self._first = first
        self._last = last

    @staticmethod
    def cql(keyspace: str, table: str, column: str) -> str:
        columns = (*NAME_TABLES[table], column)
        return (
            f"INSERT INTO {keyspace}.{table} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)}) USING TIMESTAMP ? AND TTL ?"
        )

    def bind(self, table: str, key: Sequence[str], sent_at: int, ttl: bytes) -> tuple[Any, Any]:
        """The two bound inserts (``first_seen``, ``last_seen``) of the row ``key`` of ``table``, seen at
        ``sent_at`` (epoch ms); each has a ``routing_key``."""
        from cassandra.query import BoundStatement

        cells = [k.encode("utf-8") for k in key]
        at = _INT64(sent_at)
        out = []
        for statement, timestamp in (
            (self._first[table], -sent_at * 1000),
            (self._last[table], sent_at * 1000),
        ):
            bound = BoundStatement(statement)
            bound.values = [*cells, at, _INT64(timestamp), ttl]
            bound.raw_values = bound.values
            out.append(bound)
        return out[0], out[1]


class PreparedKeyspace:
    """The sink's inserts into one keyspace and the cell encoder of every column they bind."""

    def __init__(
        self, rows: EventRows, tables: Sequence[PreparedTable], names: PreparedNames, spill: Any = None
    ) -> None:
        self.rows = rows
        self.tables = tuple(tables)
        self.names = names
        self.spill = spill
        """The prepared ``UPDATE chat_by_user USING TTL ? SET spilled = true WHERE <month partition>``."""
        statement = tables[0].statement
        self.consistency_level = statement.consistency_level
        self._protocol = statement.protocol_version
        types: dict[str, Any] = {}
        for table in tables:
            for column, meta in zip(table.rows.columns, table.statement.column_metadata, strict=False):
                known = types.setdefault(column, meta.type)
                if cql_name(known) != cql_name(meta.type):
                    raise SchemaMismatch(
                        f"column {column} is {cql_name(known)} in one table and {cql_name(meta.type)} "
                        f"in {table.rows.table}: the sink writes one value per column"
                    )
        self._encoders = [encoder(types[c], self._protocol) for c in rows.columns]

    def cells(self, event: ChatEvent) -> list[Any]:
        """Every column of the event serialized once (``rows.columns`` order)."""
        return [encode(v) for encode, v in zip(self._encoders, self.rows.values(event), strict=True)]

    def ttl(self, seconds: int) -> bytes:
        """The cell of a ``USING TTL ?`` value (0: no expiry)."""
        from cassandra.cqltypes import Int32Type

        return bytes(Int32Type.serialize(seconds, self._protocol))

    def spill_statement(self, key: Sequence[Any], ttl: bytes) -> Any:
        """The bound flag of a spilled user-month (:attr:`spill`) for month partition key cells ``key``."""
        from cassandra.query import BoundStatement

        bound = BoundStatement(self.spill)
        bound.values = [ttl, *key]
        bound.raw_values = bound.values
        return bound


class WorkerSession:
    """A Cassandra session with the sink's prepared statements, per keyspace."""

    def __init__(self, settings: SinkSettings) -> None:
        from cassandra.policies import ExponentialReconnectionPolicy

        from core.cql import one_line_driver_logs

        kwargs: dict[str, Any] = {"reconnection_policy": ExponentialReconnectionPolicy(0.5, 8.0)}
        try:
            from cassandra.io.libevreactor import LibevConnection

            kwargs["connection_class"] = LibevConnection
        except ImportError:  # pragma: no cover - the driver's default reactor
            pass
        one_line_driver_logs()
        where = f"connecting to Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port}"
        self.cluster, self.session = with_retry(
            where,
            settings.sink_cassandra_retry_s,
            lambda: _connect(settings, **kwargs),
        )
        self._single_host = len(self.cluster.metadata.all_hosts()) == 1
        self._replicas: dict[bytes, Hashable] = {}
        self._keyspaces: dict[str, PreparedKeyspace] = {}
        self._lock = threading.Lock()

    def keyspace(self, keyspace: str, consistency: str, retry_s: float) -> PreparedKeyspace:
        """The prepared inserts of every table the sink writes in ``keyspace``."""
        with self._lock:
            if keyspace not in self._keyspaces:
                self._keyspaces[keyspace] = with_retry(
                    f"preparing the inserts of keyspace {keyspace}",
                    retry_s,
                    lambda: self._prepare(keyspace, consistency),
                )
            return self._keyspaces[keyspace]

    def _prepare(self, keyspace: str, consistency: str) -> PreparedKeyspace:
        from cassandra import ConsistencyLevel

        wanted = set(TABLES) | set(NAME_TABLES)
        meta = self.cluster.metadata.keyspaces.get(keyspace)
        if meta is None or not wanted <= set(meta.tables):
            self.cluster.refresh_schema_metadata()
            meta = self.cluster.metadata.keyspaces.get(keyspace)
        if meta is None:
            raise SchemaMismatch(f"keyspace {keyspace} does not exist")
        missing = sorted(wanted - set(meta.tables))
        if missing:
            raise SchemaMismatch(
                f"keyspace {keyspace} lacks table(s) {', '.join(missing)} (`chatlog init` creates them)"
            )
        level = ConsistencyLevel.name_to_value[consistency]
        rows = EventRows(
            {name: [c.name for c in meta.tables[name].columns.values() if not c.is_static] for name in TABLES}
        )
        prepared = []
        for table in rows.tables:
            columns = table.columns
            cql = (
                f"INSERT INTO {keyspace}.{table.table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)}) USING TTL ?"
            )
            statement = self.session.prepare(cql)
            statement.is_idempotent = True
            statement.consistency_level = level
            prepared.append(PreparedTable(table, statement))
        names: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
        for name_table in NAME_TABLES:
            for column, statements in zip(("first_seen", "last_seen"), names, strict=True):
                statement = self.session.prepare(PreparedNames.cql(keyspace, name_table, column))
                statement.is_idempotent = True
                statement.consistency_level = level
                statements[name_table] = statement
        spill = self.session.prepare(
            f"UPDATE {keyspace}.chat_by_user USING TTL ? SET spilled = true "
            "WHERE channel_key = ? AND user_key = ? AND period = ?"
        )
        spill.is_idempotent = True
        spill.consistency_level = level
        return PreparedKeyspace(rows, prepared, PreparedNames(*names), spill)

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


def _connect(settings: SinkSettings, **kwargs: Any) -> tuple[Any, Any]:
    """:func:`core.cql.connect` with native protocol v4: v5 checksums every frame with CRC32, which
    costs the writer CPU for nothing TCP does not already check on a LAN (``chatlog bench sink``'s raw
    insert measures the writer's CPU per event)."""
    from core.cql import connect

    return connect(settings, timeout=settings.sink_cassandra_timeout_s, protocol_version=4, **kwargs)


class CassandraWriter:
    """The partition task's one way into Cassandra (made by :func:`writer`): one task's inserts into
    the keyspace of ``settings`` through a :class:`WorkerSession`.

    The caller turns events into items (:meth:`cells`, :attr:`tables`' ``bind``, :meth:`replicas`),
    hands them over in chunks (:meth:`submit`: token-aware batches, a bounded window of concurrent
    requests), then :meth:`finish` waits for them and retries what failed.
    """

    def __init__(self, session: WorkerSession, settings: SinkSettings) -> None:
        self.keyspace = settings.cassandra_keyspace
        self._session = session
        self._prepared = session.keyspace(
            self.keyspace, settings.sink_write_consistency, settings.sink_cassandra_retry_s
        )
        self.tables: tuple[PreparedTable, ...] = self._prepared.tables
        self.names: PreparedNames = self._prepared.names
        self._executor = ConcurrentExecutor(
            session.session, settings.sink_write_concurrency, settings.sink_cassandra_timeout_s
        )
        self._limits = BatchLimits(
            settings.sink_batch_max_rows, settings.sink_batch_max_partitions, settings.sink_batch_max_bytes
        )
        self._retry_s = settings.sink_cassandra_retry_s

    def cells(self, event: ChatEvent) -> list[Any]:
        """Every column of ``event`` serialized once (:meth:`PreparedKeyspace.cells`)."""
        return self._prepared.cells(event)

    def ttl(self, seconds: int) -> bytes:
        """The cell of a ``USING TTL ?`` value (0: no expiry)."""
        return self._prepared.ttl(seconds)

    def half_day(self, event: ChatEvent) -> Any:
        """The ``period`` cell of the event's half-day partition."""
        return _INT32(user_period(event.sent_at))

    def spill(self, key: Sequence[Any], ttl: bytes) -> Any:
        """The bound flag of a spilled user-month (:meth:`PreparedKeyspace.spill_statement`)."""
        return self._prepared.spill_statement(key, ttl)

    def replicas(self, routing_key: bytes) -> Hashable:
        """The replicas owning the partition of ``routing_key`` (what batches are grouped by)."""
        return self._session.replicas(self.keyspace, routing_key)

    def submit(self, chunk: Sequence[Item]) -> None:
        """Send ``chunk``: as unlogged batches per replica set (:func:`plan_batches`), or one by one."""
        executor = self._executor
        if self._limits.max_rows == 1:
            for item in chunk:
                executor.submit(item.statement, (item,))
            return
        from cassandra.query import BatchStatement, BatchType

        for batch in plan_batches(chunk, self._limits):
            if len(batch) == 1:
                executor.submit(batch[0].statement, batch)
                continue
            statement = BatchStatement(
                batch_type=BatchType.UNLOGGED, consistency_level=self._prepared.consistency_level
            )
            for item in batch:
                statement.add(item.statement)
            statement.is_idempotent = True
            executor.submit(statement, batch)

    def finish(self, reject: Reject) -> tuple[int, int]:
        """Wait for every write, retry the failed ones (:func:`retry_failed`; what Cassandra rejects as
        invalid goes to ``reject``); returns (re-tries, requests sent)."""
        retries = retry_failed(self._executor, self._executor.drain(), self._retry_s, reject=reject)
        return retries, self._executor.requests


def writer(settings: SinkSettings) -> CassandraWriter:
    """The entry point of the write path: a :class:`CassandraWriter` for one task, on this process's
    session for the cluster of ``settings`` (:func:`worker_session`, created on first use)."""
    return CassandraWriter(worker_session(settings), settings)


_SESSIONS: dict[Hashable, WorkerSession] = {}
_SESSIONS_LOCK = threading.Lock()


def worker_session(settings: SinkSettings) -> WorkerSession:
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
            session = _SESSIONS[key] = WorkerSession(settings)
        return session


def close_sessions() -> None:
    """Shut down every cached session (tests, end of a process)."""
    with _SESSIONS_LOCK:
        for session in _SESSIONS.values():
            session.shutdown()
        _SESSIONS.clear()
