"""Settings of the ingester (``chatlog ingest``), the registry and ``chatlog status``.

Every key is a ``CHATLOG_*`` environment variable (``ingest_handoff_overlap_s`` is
``CHATLOG_INGEST_HANDOFF_OVERLAP_S``); flags of the commands override them.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Literal

from pydantic import Field, field_validator

from chatlog.settings import IrcSettings, KafkaSettings
from ingest.irc.settings import PoolSettings

_WORKER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,63}")  # IRC nicks start with it (ingest/irc/login.py)


def default_worker_id() -> str:
    """``<host>-<pid>``: unique per process on a host, readable in `chatlog status`."""
    host = re.sub(r"[^A-Za-z0-9\-]", "-", socket.gethostname().split(".")[0]) or "host"
    return f"{host[:40]}-{os.getpid()}"


class RegistrySettings(IrcSettings, KafkaSettings):
    """`chatlog channels`: Kafka, plus the IRC flavor that decides which channel names are valid."""


class StatusSettings(RegistrySettings):
    """`chatlog status`: which heartbeats still count."""

    status_stale_s: float = Field(
        10.0, gt=0, description="Heartbeats older than this many seconds are ignored (the worker is gone)."
    )


class IngestSettings(PoolSettings, KafkaSettings):
    """One ingester: its consumer-group membership, its producer, its heartbeats and its metrics."""

    ingest_replica: int = Field(0, ge=0, le=999, description="Replica (consumer group) of this ingester.")
    ingest_worker_id: str | None = Field(
        None, description="Worker id (nicks, status key, `ingester` field); default <host>-<pid>."
    )
    ingest_group_prefix: str = Field(
        "chatlog-ingest", min_length=1, description="Consumer group id is <prefix>-r<replica>."
    )
    ingest_group_protocol: Literal["consumer", "classic"] = Field(
        "consumer",
        description="`consumer` = KIP-848 (broker-side assignment); `classic` = cooperative-sticky.",
    )
    ingest_session_timeout_ms: int = Field(
        10_000, ge=1000, description="Session timeout of the classic protocol (KIP-848: set on the broker)."
    )
    ingest_handoff_overlap_s: float = Field(
        10.0, ge=0, description="A revoked bucket is still logged this long (make-before-break hand-off)."
    )
    ingest_shutdown_drain_s: float = Field(
        5.0, ge=0, description="On SIGTERM: after leaving the group, keep logging this long, then part."
    )
    ingest_heartbeat_s: float = Field(2.0, gt=0, description="Seconds between status heartbeats.")
    ingest_compression: Literal["zstd", "lz4", "snappy", "gzip", "none"] = Field(
        "zstd", description="Producer compression; zstd: half the bytes of lz4, no slower (bench ingest)."
    )
    ingest_linger_ms: float = Field(5.0, ge=0, description="Producer linger.ms (batching delay).")
    ingest_batch_bytes: int = Field(1_000_000, ge=1024, description="Producer batch.size (bytes).")
    ingest_queue_max_messages: int = Field(
        500_000, ge=1000, description="Producer queue limit (messages); a full queue waits, never drops."
    )
    ingest_queue_max_kbytes: int = Field(
        1_048_576, ge=1024, description="Local producer queue limit (KiB); a full queue waits, never drops."
    )
    ingest_delivery_timeout_ms: int = Field(
        120_000, ge=1000, description="librdkafka delivery.timeout.ms: time to deliver before a failure."
    )
    ingest_delivery_attempts: int = Field(
        3, ge=1, description="Produce attempts of one record before it goes to the dead-letter topic."
    )
    ingest_malformed_log_interval_s: float = Field(
        60.0, gt=0, description="Malformed lines are logged once per reason, then at most this often."
    )
    metrics_port: int = Field(9100, ge=0, le=65535, description="Prometheus port; 0 picks a free one.")
    metrics_host: str = Field("0.0.0.0", description="Address the metrics endpoint listens on.")

    @field_validator("ingest_worker_id")
    @classmethod
    def _valid_worker_id(cls, value: str | None) -> str | None:
        if value is not None and not _WORKER_ID.fullmatch(value):
            raise ValueError("1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit")
        return value

    @property
    def worker_id(self) -> str:
        return self.ingest_worker_id or default_worker_id()

    @property
    def group_id(self) -> str:
        return f"{self.ingest_group_prefix}-r{self.ingest_replica}"
