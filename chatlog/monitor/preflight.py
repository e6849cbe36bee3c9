"""Checks before the faust worker starts, so that a wrong setup is one clear line, not a hung worker.

faust (aiokafka) would otherwise start and then fail deep inside: a missing source topic, a changelog
topic left over with another partition count, a codec it cannot decompress (the ingesters compress
heartbeats with zstd, the registry with lz4), or a port already taken.
"""

from __future__ import annotations

import importlib
import socket
import ssl
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException

from chatlog.errors import ChatlogError
from chatlog.kafka_admin import admin_client
from chatlog.monitor.settings import MonitorSettings

CHANGELOG_SUFFIX = "-changelog"
TABLE_CHANNELS = "channels"
TABLE_HEARTBEATS = "heartbeats"


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


def source_partitions(settings: MonitorSettings, timeout: float = 30.0) -> SourcePartitions:
    """Partition counts of the two source topics; existing changelog topics must match them."""
    try:
        topics = admin_client(settings).list_topics(timeout=timeout).topics
    except KafkaException as exc:
        raise ChatlogError(f"cannot reach Kafka at {settings.kafka_bootstrap_servers}: {exc}") from None

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


def check_port(host: str, port: int, what: str) -> None:
    """Fail early when a listening port is taken (faust's web server would die after joining the group)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ChatlogError(f"{what} port {host}:{port} is not available: {exc.strerror}") from None


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
        return faust.SSLCredentials(ssl.create_default_context())
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        password = settings.kafka_sasl_password
        return faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=password.get_secret_value() if password is not None else None,
            mechanism=settings.kafka_sasl_mechanism or "PLAIN",
            ssl_context=ssl.create_default_context() if protocol == "SASL_SSL" else None,
        )
    raise ChatlogError(f"setting kafka_security_protocol: {protocol} is not supported by the monitor")
