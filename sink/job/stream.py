"""The streaming sink: Kafka ``chatlog.messages`` -> :mod:`sink.job.transform` -> foreachBatch writes.

Exactly-once rows from at-least-once delivery: Spark records a batch's offsets in the checkpoint
before running it and commits it after ``foreachBatch`` returned; a crash in between re-runs the batch
from the same offsets with the same dedup state, and the idempotent writes make the re-run harmless.
The query stops only on infrastructure failures (Cassandra or Kafka unreachable for longer than the
retry bound), never on data: bad records become dead letters.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.errors import ChatlogError
from sink import spark_private
from sink.dedup import RecentIds
from sink.job import transform
from sink.job.progress import BatchTracker, Metrics, Totals
from sink.job.restart_ids import restart_ids
from sink.job.session import get_session, kafka_options
from sink.job.warm_up import warm_executors
from sink.job.write import write_dataframe
from sink.job.written import WrittenOffsets
from sink.side.ledger import LedgerWriter
from sink.side.optout_follower import OptOutFollower, follower

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from sink.settings import SinkSettings

log = logging.getLogger(__name__)
OBSERVATION = "records"
_OWN_ERRORS = re.compile(r"(?:CassandraWriteError|DeadLetterError|SchemaMismatch|ChatlogError): ([^\n]+)")


def failure_message(exc: BaseException, settings: SinkSettings | None = None) -> str:
    """One line for a failed query: our own error when a worker raised one, Kafka refusing the source
    (with ``settings``: login, TLS; secrets masked), else Spark's first line."""
    text = str(exc)
    if settings is not None:
        from sink.job.session import kafka_failure

        refused = kafka_failure(exc, settings)
        if refused is not None:
            return refused
    match = _OWN_ERRORS.search(text)
    if match:
        return match.group(1).strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return first[:400]


def ensure_schema(settings: SinkSettings) -> None:
    """Create the keyspace and tables if missing (``sink_apply_schema``; a new keyspace is recorded at the
    current layout) and refuse, in one line, a keyspace of another layout (``chatlog init`` moves it),
    retrying while Cassandra is unreachable."""
    from core.cql import connect
    from store.requests import CassandraWriteError, with_retry
    from store.schema import LayoutMismatch, apply_schema, require_layout

    def attempt() -> None:
        try:
            if settings.sink_apply_schema:
                apply_schema(settings, settings.cassandra_keyspace, migrate=False)
                return
            cluster, session = connect(settings)
            try:
                require_layout(session, settings.cassandra_keyspace)
            finally:
                cluster.shutdown()
        except LayoutMismatch as exc:
            raise ChatlogError(str(exc)) from None

    try:
        with_retry(
            f"checking the schema of keyspace {settings.cassandra_keyspace}",
            settings.sink_cassandra_retry_s,
            attempt,
            fatal=(LayoutMismatch, ChatlogError),
        )
    except CassandraWriteError as exc:
        raise ChatlogError(str(exc)) from None


def kafka_stream(spark: SparkSession, settings: SinkSettings) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .options(**kafka_options(settings))
        .option("subscribe", settings.topic_messages)
        .option("startingOffsets", settings.sink_starting_offsets)
        .option("failOnDataLoss", str(settings.sink_fail_on_data_loss).lower())
    )
    if settings.sink_max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(settings.sink_max_offsets_per_trigger))
    return transform.coalesced(reader.load(), settings.read_tasks)


def start_query(
    spark: SparkSession,
    settings: SinkSettings,
    tracker: BatchTracker,
    *,
    available_now: bool = False,
    optouts: OptOutFollower | None = None,
) -> StreamingQuery:
    """Start the streaming query; ``available_now`` reads what Kafka holds now, then stops. Each batch
    is written without the events of the opt-outs ``optouts`` holds when it starts."""
    rows = transform.sink_rows(kafka_stream(spark, settings), observation=OBSERVATION)
    recent = RecentIds(settings.dedup_retention_ms)
    seeded = restart_ids(settings)  # a re-run batch drops the copies the killed run dropped
    if seeded:
        recent.add(seeded)

    def process(batch: DataFrame, batch_id: int) -> None:
        ids = recent.blob()
        if optouts is None:
            written = write_dataframe(batch, settings, recent=ids)
        else:
            with optouts.batch() as current:
                written = write_dataframe(batch, settings, optouts=current, recent=ids)
            optouts.learn(written.optout_logins)
        recent.add(written.written_ids)
        written.written_ids = b""
        tracker.written(batch_id, written)

    writer = (
        rows.writeStream.foreachBatch(process)
        .option("checkpointLocation", settings.checkpoint_location)
        .queryName(f"chatlog_sink_{settings.cassandra_keyspace}")
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger_ms} milliseconds")
    return writer.start()


class ProgressFeed:
    """The progress updates of a query that were not read yet, oldest first, as the JSON Spark reports.

    Reads the updates newest first, stopping at the first one already read, from the JVM's progress objects
    directly (:func:`sink.spark_private.recent_progress`): one ``json()`` call per new update. pyspark's
    public ``recentProgress`` converts every retained update (up to 100) field by field, ~60 Py4J round
    trips and a class lookup each, every poll (every second).
    """

    def __init__(self, query: StreamingQuery) -> None:
        spark_private.check_query(query)
        self.query = query
        self._newest = ""  # the timestamp of the newest update read (ISO-8601 UTC, sorts as text)

    def _recent(self) -> tuple[int, Callable[[int], str]]:
        """How many updates Spark retains, and the JSON of the i-th (oldest first)."""
        jvm_updates = spark_private.recent_progress(self.query)
        return len(jvm_updates), lambda i: str(jvm_updates[i].json())

    def new(self) -> list[dict[str, Any]]:
        count, text = self._recent()
        found: list[dict[str, Any]] = []
        for index in range(count - 1, -1, -1):
            progress = json.loads(text(index))
            if str(progress.get("timestamp", "")) <= self._newest:
                break
            found.append(progress)
        found.reverse()
        if found:
            self._newest = max(self._newest, *(str(p.get("timestamp", "")) for p in found))
        return found


def run(
    settings: SinkSettings,
    *,
    available_now: bool = False,
    stop: threading.Event | None = None,
    metrics: Metrics | None = None,
) -> Totals:
    """Run the sink until it is stopped (SIGTERM/SIGINT or ``stop``) or, with ``available_now``, until
    it has caught up. Raises :class:`ChatlogError` with one line when the query fails."""
    from pyspark.errors import StreamingQueryException

    t0 = time.monotonic()
    ensure_schema(settings)
    spark = get_session(settings)
    session_s = time.monotonic() - t0
    spark_private.check(spark)
    warm_executors(spark, settings)
    own_metrics = metrics is None
    if metrics is None:
        metrics = _open_metrics(settings)
    tracker = BatchTracker(metrics)
    stop = stop or threading.Event()
    optouts = _start_optouts(settings, metrics if own_metrics else None)
    try:
        ledger = _start_ledger(settings) if settings.sink_ledger and not available_now else None
    except BaseException:
        optouts.close()
        raise
    restore = _stop_on_signals(stop)
    written: WrittenOffsets | None = None
    query = start_query(spark, settings, tracker, available_now=available_now, optouts=optouts)
    _log_started(settings, time.monotonic() - t0, session_s, available_now=available_now)

    def advance() -> None:
        """Report the batches done since the last call, and tell readers how far they wrote."""
        done = feed.new()
        tracker.consume(done)
        if written is not None:
            written.commit(done)

    try:
        feed = ProgressFeed(query)
        written = WrittenOffsets(settings)
        while query.isActive and not stop.is_set():
            query.awaitTermination(1)
            advance()
        if query.isActive:
            query.stop()
        advance()
        failure = query.exception()
        if failure is not None:
            raise ChatlogError(f"sink query failed: {failure_message(failure, settings)}")
    except StreamingQueryException as exc:
        advance()
        raise ChatlogError(f"sink query failed: {failure_message(exc, settings)}") from None
    finally:
        if query.isActive:  # stopped early: a private API missing on the started query, an interrupt
            query.stop()
        restore()
        if written is not None:
            written.close()
        if ledger is not None:
            ledger.close()
        optouts.close()
        if own_metrics:
            metrics.close()
    return tracker.totals


def _open_metrics(settings: SinkSettings) -> Metrics:
    """The sink's Prometheus endpoint on ``sink_metrics_port``; a :class:`ChatlogError` naming the port when
    it cannot listen there."""
    try:
        return Metrics(settings.sink_metrics_port)
    except OSError as exc:
        raise ChatlogError(
            f"metrics port {settings.sink_metrics_port} (CHATLOG_SINK_METRICS_PORT): {exc.strerror}"
        ) from None


def _log_started(settings: SinkSettings, started_s: float, session_s: float, *, available_now: bool) -> None:
    """The log line of a started sink: how long it took (its Spark session's part) and what it reads and
    writes."""
    log.info(
        "sink started in %.1fs (its Spark session after %.1fs): %s -> keyspace %s, checkpoint %s, trigger "
        "%s, copies up to %s apart dropped",
        started_s,
        session_s,
        settings.topic_messages,
        settings.cassandra_keyspace,
        settings.checkpoint_location,
        "available-now" if available_now else settings.sink_trigger,
        settings.sink_dedup_window,
    )


def _start_optouts(settings: SinkSettings, metrics: Metrics | None) -> OptOutFollower:
    """The opt-out follower (sink/side/optout_follower.py), read to the end of its topic before any batch."""
    optouts = follower(settings, erase=settings.sink_optout_erase, catch_up=settings.sink_optout_erase)
    try:
        optouts.start()
    except BaseException:
        optouts.close()
        if metrics is not None:
            metrics.close()
        raise
    return optouts


def _start_ledger(settings: SinkSettings) -> LedgerWriter:
    """The coverage ledger's writer, a thread beside the query (sink/side/ledger.py)."""
    from core.cql import connect_failure

    try:
        ledger = LedgerWriter(settings, settings)
    except Exception as exc:  # the driver raises several kinds
        raise ChatlogError(f"coverage ledger: {connect_failure(settings, exc)}") from None
    ledger.start()
    return ledger


def _stop_on_signals(stop: threading.Event) -> Any:
    """SIGTERM/SIGINT stop the query gracefully (main thread only); returns a function restoring them."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handler(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping the sink after the current batch", signum)
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
