"""Settings of the sink (``chatlog sink``, ``chatlog sink --backfill``; the benchmarks that write as the sink
does, ``chatlog bench sink``, ``serve`` and ``vs-justlog``, load them too).

Every key is a ``CHATLOG_*`` environment variable documented here with its default; flags override
them. Kafka and Cassandra keys come from :class:`core.settings.KafkaSettings` (with the opt-out topic,
:class:`consent.settings.ConsentSettings`) and
:class:`core.settings.CassandraSettings` (e.g. ``CHATLOG_CASSANDRA_TTL_S`` for retention).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, field_validator

from consent.settings import ConsentSettings
from core.settings import INT32_MAX, PROJECT_ROOT, CassandraSettings, Consistency, PortOrZero

_UNITS_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
}
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")


def interval_ms(text: str) -> int:
    """Milliseconds of an interval such as ``10 minutes``, ``500 ms``, ``2s``; ValueError otherwise."""
    match = _INTERVAL.match(text.lower())
    if not match or match.group(2) not in _UNITS_MS:
        raise ValueError(f"not an interval: {text!r} (e.g. '10 minutes', '500 milliseconds', '2s')")
    return round(float(match.group(1)) * _UNITS_MS[match.group(2)])


def local_checkpoint(location: str) -> bool:
    """True when ``location`` is on the local file system (a path, or a ``file:`` URI)."""
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", location)
    return scheme is None or scheme.group(1).lower() == "file"


class SinkSettings(ConsentSettings, CassandraSettings):
    """The Spark Structured Streaming sink: Kafka ``chatlog.messages`` to Cassandra; it drops the events of
    opted-out users and channels (the opt-out topic of :class:`consent.settings.ConsentSettings`) and
    erases the rows of new opt-outs (``sink_optout_erase``)."""

    state_dir: Path = Field(PROJECT_ROOT / ".state", description="Local state (checkpoint default).")
    cache_dir: Path = Field(PROJECT_ROOT / ".cache", description="Maven artifacts (Spark Kafka jars).")
    sink_checkpoint: str | None = Field(
        None,
        description="Checkpoint location: a local path or any Hadoop file system URI "
        "(hdfs://, s3a://, ...). Default <state_dir>/sink/checkpoint.",
    )
    spark_master: str = Field("local[*]", description="Spark master URL.")
    spark_app_name: str = Field("chatlog-sink", description="Spark application name.")
    spark_driver_memory: str = Field("1g", description="spark.driver.memory (only before the JVM starts).")
    spark_driver_java_options: str = Field(
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        description="spark.driver.extraJavaOptions of a sink that starts its own JVM (local mode: the driver "
        "is the executor too). The default compiles with C1 only and collects with the serial collector: "
        "Spark plans every micro-batch anew, so a streaming driver's JIT keeps compiling planner code for "
        "many minutes (C2 took ~20 % of a core 5 minutes in), and its heap is small; the demo's Spark JVM "
        "spent 318 -> 119 µs per message with them. Empty: the JVM's defaults.",
    )
    spark_shuffle_partitions: int = Field(
        2,
        ge=1,
        description="spark.sql.shuffle.partitions: dedup state partitions and writer tasks. About the "
        "number of cores the sink has; a checkpoint keeps the number it started with.",
    )
    sink_read_tasks: int | None = Field(
        None,
        ge=0,
        description="Tasks that read Kafka in a micro-batch: the topic's partitions are coalesced into "
        "this many (each task then reads several partitions in turn). Unset: spark_shuffle_partitions; "
        "0: one task per Kafka partition. Every task has a fixed cost, paid every micro-batch.",
    )
    spark_ui: bool = Field(False, description="Start the Spark web UI.")
    spark_log_level: str = Field("WARN", description="Spark's log level (log4j).")
    spark_jars: str | None = Field(
        None,
        description="Comma-separated jars for the Kafka source instead of the Maven cache "
        "(clusters); unset: the cached spark-sql-kafka-0-10 bundle, fetched if missing.",
    )
    spark_packages: str | None = Field(
        None, description="spark.jars.packages (Maven coordinates) instead of jars, for clusters."
    )
    sink_dedup_window: str = Field(
        "30 seconds",
        description="How far apart two copies of a message may reach Kafka and still be stored once: the "
        "ids a batch wrote are handed to the batches that start within this plus the trigger interval of "
        "its end (a copy is read by the first batch after it arrives). Copies of a message arrive within a "
        "fraction of a second of each other (4 make demo runs: skew p99.9 0.05-0.13 s, max 0.12-0.26 s); "
        "a broker that hangs splits them by its producers' failover (a cluster's 5-s request timeout, 5-s "
        "metadata refresh and 5-s fencing: ~15 s), so 30 s is twice that. A copy later than the window is "
        "written again, into another block: reads drop a line they have read already, and `chatlog pack` "
        "merges the blocks. Each batch carries 16 bytes per id it hands over (at 5k events/s and the "
        "default trigger: 3.2 MB).",
    )
    sink_trigger: str = Field(
        "10 seconds",
        description="Micro-batch trigger interval; '0 seconds' runs batches back to back. Every "
        "micro-batch has a fixed cost (planning, tasks, requests), so a longer one costs less CPU per "
        "message; what users read does not wait for it: reads of the present merge what Kafka holds beyond "
        "the sink's written offsets (docs/api.md, freshness).",
    )
    sink_max_offsets_per_trigger: int = Field(
        400_000,
        ge=0,
        description="Most Kafka records per micro-batch (0 = no limit). A sink that is behind (a restart, "
        "a burst) catches up in batches of at most this many instead of one batch of everything it missed. "
        "It must exceed what a trigger interval brings (every message twice at R = 2): 400,000 is 20,000 "
        "msg/s at R = 2 over the default 10 s; a batch is written in chunks of CHUNK_EVENTS per task, so "
        "its size bounds the batch's time, not the writers' memory.",
    )
    sink_kafka_fetch_max_wait_ms: int = Field(
        10,
        ge=0,
        le=INT32_MAX,
        description="kafka.fetch.max.wait.ms of Spark's Kafka consumers. At the live end of the log a "
        "pooled consumer's read-ahead fetch waits this long for data that is not there, and the next "
        "task reading that partition waits for it: Kafka's 500 ms default made every live batch take "
        "seconds (12 partitions on 2 cores).",
    )
    sink_kafka_max_poll_records: int = Field(
        20_000,
        ge=1,
        le=INT32_MAX,
        description="kafka.max.poll.records of Spark's Kafka consumers (Kafka's default 500). Spark asks "
        "the broker for the partition's earliest and latest offsets after every poll (two LIST_OFFSETS "
        "requests): a batch of 20,000 records per partition took 40 polls and 80 requests at 500.",
    )
    sink_kafka_request_timeout_ms: int = Field(
        10_000,
        ge=1000,
        le=INT32_MAX,
        description="kafka.request.timeout.ms of Spark's Kafka source (the driver's offset lookups, the "
        "executors' fetches). A lookup sent while a partition's leader is gone waits this long before it "
        "is retried on the new leader: with Kafka's 30 s default a broker's kill -9 stopped the sink ~35 s.",
    )
    sink_kafka_api_timeout_ms: int | None = Field(
        None,
        ge=1000,
        le=INT32_MAX,
        description="kafka.default.api.timeout.ms of Spark's Kafka source: how long the driver's offset "
        "lookup of a micro-batch may take before Spark retries it (3 times, then the query fails). A lookup "
        "sent to a leader that died is retried on that broker until then: 10000 bounds a broker's kill -9 "
        "to about that, but a whole Kafka outage longer than ~35 s then stops the sink. Unset: Kafka's "
        "60 s.",
    )
    sink_kafka_metadata_max_age_ms: int | None = Field(
        None,
        ge=1000,
        le=INT32_MAX,
        description="kafka.metadata.max.age.ms of Spark's Kafka source: how often the driver's and the "
        "executors' clients refresh the brokers they know, at least. A broker the controller fenced (it "
        "hung) stays in a client's list until then, and the driver's offset lookups may be sent to it: "
        "with Kafka's 5 min a micro-batch waited 10 s for a broker fenced 9 s before. Unset: Kafka's 5 min "
        "(`chatlog stack env --nodes 3` sets 5000).",
    )
    sink_kafka_reconnect_backoff_ms: int | None = Field(
        None,
        ge=50,
        le=INT32_MAX,
        description="kafka.reconnect.backoff.ms (and .max.ms) of Spark's Kafka source: how long its clients "
        "wait before they connect again to a broker whose request timed out. A hung broker still accepts "
        "connections, and a client asks the broker it is connecting to for metadata before any other, so "
        "with Kafka's 50 ms-1 s an executor kept asking the hung leader, every request timeout, until it "
        "resumed; after a pause of this length it asks another broker, which names the new leader. Unset: "
        "Kafka's (`chatlog stack env --nodes 3` sets 5000).",
    )
    sink_starting_offsets: Literal["earliest", "latest"] = Field(
        "earliest", description="Where a new checkpoint starts reading (a restart resumes its checkpoint)."
    )
    sink_fail_on_data_loss: bool = Field(
        False,
        description="Stop when Kafka deleted records before the sink (or a backfill) read them "
        "(retention); false logs it and goes on. `chatlog stack env --nodes 3` sets true: a broker that "
        "resumes after a hang answers a moment as if it still led, from its shorter log, and a read past "
        "its end looks like records deleted (skipped with false: a run lost 100 messages so); true fails "
        "the task, which Spark retries on the real leader.",
    )
    sink_write_concurrency: int = Field(
        32, ge=1, le=2048, description="Cassandra requests in flight per Python worker."
    )
    sink_batch_max_rows: int = Field(
        100, ge=1, description="Most rows in one unlogged batch (1 disables batching)."
    )
    sink_batch_max_partitions: int = Field(
        60,
        ge=1,
        description="Most partitions in one unlogged batch, all owned by the same replicas (so the "
        "coordinator is one of them). Cassandra logs a warning, at most once a minute, above its "
        "unlogged_batch_across_partitions_warn_threshold (default 10; 64 on the local stack).",
    )
    sink_batch_max_bytes: int = Field(
        48 * 1024, ge=1024, description="Approximate payload limit of one batch (Cassandra fails at 50 KiB)."
    )
    sink_cassandra_retry_s: float = Field(
        120.0,
        gt=0,
        le=INT32_MAX // 1000,
        description="How long writes keep retrying (exponential backoff) while Cassandra fails, "
        "before the query fails loudly; also the dead-letter producer's message.timeout.ms (at most "
        "2147483 s).",
    )
    sink_write_consistency: Consistency = Field(
        "LOCAL_QUORUM",
        description="Consistency level of the sink's row writes (its other reads and writes: "
        "CHATLOG_CASSANDRA_CONSISTENCY).",
    )
    sink_cassandra_timeout_s: PositiveFloat = Field(10.0, description="Timeout of one Cassandra request.")
    sink_metrics_port: PortOrZero = Field(
        9101, description="Prometheus metrics HTTP port of the sink (0 = off)."
    )
    sink_apply_schema: bool = Field(True, description="Create the keyspace and tables at start if missing.")
    sink_optout_erase: bool = Field(
        True,
        description="The streaming sink erases the stored rows of every new opt-out without keep_history "
        "(and, at start, of those the consent audit shows no erasure for), after the batches written "
        "before it; the events of opted-out users and channels are never written, whatever this says.",
    )
    sink_ledger: bool = Field(
        True,
        description="Write the coverage ledger (chatlog.coverage -> Cassandra) beside the streaming sink; "
        "run it in exactly one sink of a deployment or in all (writes are idempotent).",
    )

    @field_validator("sink_trigger", "sink_dedup_window")
    @classmethod
    def _interval(cls, value: str) -> str:
        interval_ms(value)
        return value

    @property
    def checkpoint_location(self) -> str:
        return self.sink_checkpoint or str(self.state_dir / "sink" / "checkpoint")

    @property
    def read_tasks(self) -> int:
        """Kafka read tasks per micro-batch (0: one per Kafka partition)."""
        return self.spark_shuffle_partitions if self.sink_read_tasks is None else self.sink_read_tasks

    @property
    def dedup_window_ms(self) -> int:
        return interval_ms(self.sink_dedup_window)

    @property
    def dedup_retention_ms(self) -> int:
        """How long (batch end time) the ids a batch wrote are handed to later batches: the window plus a
        trigger interval. A copy that arrives ``dedup_window_ms`` after its first copy is read by the first
        batch that starts after it, up to a trigger interval later still, and must find the first copy's
        batch there."""
        return self.dedup_window_ms + self.trigger_ms

    @property
    def trigger_ms(self) -> int:
        return interval_ms(self.sink_trigger)
