"""Checks before the faust worker starts, so that a wrong setup is one clear line, not a hung worker.

faust (aiokafka) would otherwise start and then fail deep inside: a missing source topic, a changelog
topic left over with another partition count, a codec it cannot decompress (the ingesters compress
heartbeats with zstd, the registry with lz4), or a port already taken.
"""

from __future__ import annotations

import importlib
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from chatlog.monitor.settings import MonitorSettings
from core import kafka_offsets
from core.errors import ChatlogError
from core.kafka_admin import admin_client, topic_config
from core.kafka_probe import PROBE_TIMEOUT_S, probe

CHANGELOG_SUFFIX = "-changelog"
TABLE_CHANNELS = "channels"
TABLE_HEARTBEATS = "heartbeats"
MAX_RECORD_BYTES = 16 * 1024 * 1024
"""Largest changelog record: a heartbeat lists every channel its worker confirmed."""


@dataclass(frozen=True)
class SourcePartitions:
    channels: int
    status: int


def changelog_topic(settings: MonitorSettings, table: str) -> str:
    """The name faust gives the changelog topic of ``table``."""
    return f"{settings.monitor_app_id}-{table}{CHANGELOG_SUFFIX}"


def check_codecs() -> None:
    """aiokafka decompresses lz4 and zstd only with :pypi:`cramjam` installed."""
    codec: Any = importlib.import_module("aiokafka.codec")  # untyped, and not in mypy's ignore list
    missing = [name for name, ok in (("lz4", codec.has_lz4()), ("zstd", codec.has_zstd())) if not ok]
    if missing:
        raise ChatlogError(
            f"aiokafka cannot decompress {'/'.join(missing)} records: install cramjam (pip install cramjam)"
        )


def source_partitions(settings: MonitorSettings, timeout: float = PROBE_TIMEOUT_S) -> SourcePartitions:
    """Partition counts of the two source topics; existing changelog topics must match them."""
    topics = probe(settings, timeout).topics

    def count(name: str) -> int:
        meta = topics.get(name)
        if meta is None or meta.error is not None or not meta.partitions:
            raise ChatlogError(
                f"Kafka topic {name} does not exist (run `chatlog stack up` or `chatlog init`?)"
            )
        return len(meta.partitions)

    found = SourcePartitions(channels=count(settings.topic_channels), status=count(settings.topic_status))
    for table, want in ((TABLE_CHANNELS, found.channels), (TABLE_HEARTBEATS, found.status)):
        name = changelog_topic(settings, table)
        meta = topics.get(name)
        if meta is not None and meta.partitions and len(meta.partitions) != want:
            raise ChatlogError(
                f"changelog topic {name} has {len(meta.partitions)} partitions but its source has {want}: "
                "delete it or choose another CHATLOG_MONITOR_APP_ID"
            )
    return found


def changelog_configs() -> dict[str, dict[str, str]]:
    """Topic configs of the changelog topics, per table (what faust would declare, plus big heartbeats)."""
    return {
        TABLE_CHANNELS: {"cleanup.policy": "compact"},
        TABLE_HEARTBEATS: {"cleanup.policy": "compact", "max.message.bytes": str(MAX_RECORD_BYTES)},
    }


def ensure_changelogs(settings: MonitorSettings, partitions: SourcePartitions, timeout: float = 30.0) -> None:
    """Create the tables' changelog topics and wait until their metadata shows every partition's leader.

    faust can create them itself, but it subscribes right after creating them; when the broker's
    metadata does not list a new topic yet, aiokafka keeps seeing it with 0 partitions and every
    table write then fails with ``PartitionsMismatch`` (seen on Kafka 4.1 with a 64-partition topic).
    """
    admin = admin_client(settings)
    counts = {TABLE_CHANNELS: partitions.channels, TABLE_HEARTBEATS: partitions.status}
    wanted = {
        changelog_topic(settings, table): (counts[table], conf) for table, conf in changelog_configs().items()
    }
    try:
        existing = admin.list_topics(timeout=timeout).topics
        new = [
            NewTopic(
                name,
                num_partitions=n,
                replication_factor=settings.topic_replication_factor,
                config=topic_config(settings, conf),
            )
            for name, (n, conf) in wanted.items()
            if name not in existing
        ]
        for name, fut in admin.create_topics(new, operation_timeout=timeout).items() if new else []:
            try:
                fut.result()
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise ChatlogError(f"creating topic {name} failed: {exc}") from None
        deadline = time.monotonic() + timeout
        while True:
            topics = admin.list_topics(timeout=timeout).topics
            missing = [
                name
                for name, (n, _) in wanted.items()
                if (meta := topics.get(name)) is None
                or len(meta.partitions) != n
                or any(p.leader < 0 for p in meta.partitions.values())
            ]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ChatlogError(
                    f"changelog topics {', '.join(missing)} have no leaders after {timeout:.0f}s"
                )
            time.sleep(0.2)
    except KafkaException as exc:
        raise ChatlogError(f"cannot reach Kafka at {settings.kafka_bootstrap_servers}: {exc}") from None


def check_port(host: str, port: int, setting: str) -> None:
    """Fail early when a listening port is taken (faust's web server would die after joining the group);
    ``setting`` is the variable that chooses the port, named in the one-line error."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ChatlogError(f"port {host}:{port} ({setting}) is not available: {exc.strerror}") from None


def check_data_dir(settings: MonitorSettings) -> None:
    """Make faust's data directory now (faust makes it at start and dies with a traceback when it cannot),
    or say in one line why it cannot be."""
    path = settings.monitor_data_dir
    where = "setting monitor_data_dir (CHATLOG_MONITOR_DATA_DIR)"
    if path.exists() and not path.is_dir():
        raise ChatlogError(f"{where}: {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ChatlogError(f"{where}: cannot create {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):  # faust makes its v1/tables directories in it
        raise ChatlogError(f"{where}: {path} is not writable")


def broker_url(settings: MonitorSettings) -> str:
    """``kafka://h1:9092;h2:9092`` from ``CHATLOG_KAFKA_BOOTSTRAP_SERVERS``."""
    hosts = [h.strip() for h in settings.kafka_bootstrap_servers.split(",") if h.strip()]
    if not hosts:
        raise ChatlogError("setting kafka_bootstrap_servers (CHATLOG_KAFKA_BOOTSTRAP_SERVERS) is empty")
    return "kafka://" + ";".join(hosts)


def broker_credentials(settings: MonitorSettings) -> Any:
    """faust credentials for the librdkafka-style security settings (None for PLAINTEXT)."""
    import faust

    protocol = settings.kafka_security_protocol.upper()
    if protocol == "PLAINTEXT":
        return None
    if protocol == "SSL":
        return faust.SSLCredentials(settings.kafka_ssl_context())
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        username, password = settings.kafka_sasl_credentials() or (settings.kafka_sasl_username, None)
        return faust.SASLCredentials(
            username=username,
            password=password,
            mechanism=settings.kafka_sasl_mechanism or "PLAIN",
            ssl_context=settings.kafka_ssl_context(),  # CA file, client certificate (None: SASL_PLAINTEXT)
        )
    raise ChatlogError(f"setting kafka_security_protocol: {protocol} is not supported by the monitor")


def catch_up_targets(settings: MonitorSettings, timeout: float = 30.0) -> dict[tuple[str, int], int]:
    """(topic, partition) -> end offset, for every source partition with records the app has not committed.

    Called once the tables are recovered: the monitor reports only after its agents have folded every
    such partition up to this end offset, so a first report never takes a live worker for a dead one
    just because its latest heartbeat was not read yet.
    """
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": settings.monitor_app_id,  # only reads the group's committed offsets; never joins
            "enable.auto.commit": False,
        }
    )
    try:
        targets: dict[tuple[str, int], int] = {}
        for topic in (settings.topic_channels, settings.topic_status):
            meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
            tps = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
            committed = {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=timeout)}
            bounds = kafka_offsets.bounds(consumer, topic, [tp.partition for tp in tps], timeout)
            for p, (low, high) in bounds.items():
                if high > max(low, committed.get(p, -1)):
                    targets[(topic, p)] = high
        return targets
    except KafkaException as exc:
        raise ChatlogError(f"reading offsets of {settings.monitor_app_id}: {exc}") from None
    finally:
        consumer.close()
