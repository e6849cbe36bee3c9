"""Settings of the ingester (``chatlog ingest``), the registry and ``chatlog status``.

Every key is a ``CHATLOG_*`` environment variable (``ingest_handoff_timeout_s`` is
``CHATLOG_INGEST_HANDOFF_TIMEOUT_S``); flags of the commands override them.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, field_validator, model_validator

from consent.settings import ConsentSettings
from core.settings import INT32_MAX, IrcSettings, KafkaSettings, PortOrZero
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

    status_stale_s: PositiveFloat = Field(
        default=10.0, description="Heartbeats older than this many seconds are ignored (the worker is gone)."
    )


class IngestSettings(PoolSettings, ConsentSettings):
    """One ingester: its consumer-group membership, its producer, its heartbeats and its metrics, and
    consent (the opt-out topic it enforces, the self-service command word: consent/settings.py)."""

    ingest_replica: int = Field(
        default=0, ge=0, le=999, description="Replica (consumer group) of this ingester."
    )
    ingest_worker_id: str | None = Field(
        default=None, description="Worker id (nicks, status key, `ingester` field); default <host>-<pid>."
    )
    ingest_group_prefix: str = Field(
        default="chatlog-ingest", min_length=1, description="Consumer group id is <prefix>-r<replica>."
    )
    ingest_group_protocol: Literal["consumer", "classic"] = Field(
        default="consumer",
        description="`consumer` = KIP-848 (broker-side assignment); `classic` = cooperative-sticky.",
    )
    ingest_session_timeout_ms: int = Field(
        default=10_000,
        ge=1000,
        le=300_000,
        description="Session timeout of the classic protocol (KIP-848: set on the broker); at most 300000 "
        "(librdkafka's max.poll.interval.ms).",
    )
    ingest_handoff_timeout_s: NonNegativeFloat = Field(
        default=900.0,
        description="A revoked bucket's channels are logged until the new owner confirms its JOIN of each "
        "(make-before-break), at most this long; then parted and logged as a gap risk. At Twitch's JOIN "
        "limit a new owner joins 20 channels per 10 s; 0 = no hand-off.",
    )
    ingest_shutdown_drain_s: NonNegativeFloat = Field(
        default=45.0,
        description="On SIGTERM: after leaving the group, keep logging each channel until its new owner "
        "confirms it, at most this long, then part (keep below the pod's termination grace period).",
    )
    ingest_coverage_refresh_s: PositiveFloat = Field(
        default=6 * 3600.0,
        description="Covered channels are announced again on chatlog.coverage this often (the ledger "
        "reader looks back this far).",
    )
    ingest_heartbeat_s: PositiveFloat = Field(default=2.0, description="Seconds between status heartbeats.")
    ingest_compression: Literal["zstd", "lz4", "snappy", "gzip", "none"] = Field(
        default="zstd",
        description="Producer compression; zstd: half the bytes of lz4, no slower (bench ingest).",
    )
    ingest_linger_ms: float = Field(
        default=200.0,
        ge=0,
        le=900_000,
        description="Producer linger.ms (batching delay); at most 900000, below ingest_delivery_timeout_ms. "
        "librdkafka sends one request per partition batch: the broker's CPU goes with the requests, so a "
        "batch of 100 ms costs it a fraction of one of 5 ms; reads of the present see a line once Kafka "
        "has it (docs/api.md).",
    )
    ingest_batch_bytes: int = Field(
        default=1_000_000, ge=1024, le=INT32_MAX, description="Producer batch.size (bytes)."
    )
    ingest_queue_max_messages: int = Field(
        default=500_000,
        ge=1000,
        le=INT32_MAX,
        description="Producer queue limit (messages); a full queue waits, never drops.",
    )
    ingest_queue_max_kbytes: int = Field(
        default=1_048_576,
        ge=1024,
        le=INT32_MAX,
        description="Local producer queue limit (KiB); a full queue waits, never drops.",
    )
    ingest_delivery_timeout_ms: int = Field(
        default=120_000,
        ge=1000,
        le=INT32_MAX,
        description="librdkafka delivery.timeout.ms: time to deliver before a failure.",
    )
    ingest_delivery_attempts: int = Field(
        default=3, ge=1, description="Produce attempts of one record before it goes to the dead-letter topic."
    )
    ingest_malformed_log_interval_s: PositiveFloat = Field(
        default=60.0, description="Malformed lines are logged once per reason, then at most this often."
    )
    ingest_client_id_tags: bool = Field(
        default=False,
        description="Take a line's Twitch ids from the client-only tags +user-id, +room-id (and +badges) "
        "when it has none: for test servers (InspIRCd relays the tags a client sets), never on a real "
        "network. Only with CHATLOG_IRC_FLAVOR=ircv3.",
    )
    metrics_port: PortOrZero = Field(
        default=9100,
        description="Prometheus port (/metrics, /ready). Unset: 9100, or a free port when 9100 is taken "
        "(several ingesters on one host; the port is logged and sent in the heartbeats); 0: a free port. "
        "A port set explicitly that is taken is an error.",
    )
    metrics_host: str = Field(default="0.0.0.0", description="Address the metrics endpoint listens on.")

    @property
    def metrics_port_chosen(self) -> bool:
        """Whether the metrics port was set (variable or flag), so it must be that port or nothing."""
        return "metrics_port" in self.model_fields_set

    @model_validator(mode="after")
    def _linger_within_delivery_timeout(self) -> IngestSettings:
        if self.ingest_linger_ms >= self.ingest_delivery_timeout_ms:  # librdkafka refuses the producer
            raise ValueError(
                "CHATLOG_INGEST_LINGER_MS must be less than CHATLOG_INGEST_DELIVERY_TIMEOUT_MS "
                f"({self.ingest_linger_ms:g} >= {self.ingest_delivery_timeout_ms})"
            )
        return self

    @model_validator(mode="after")
    def _client_ids_off_twitch(self) -> IngestSettings:
        if self.ingest_client_id_tags and self.irc_flavor == "twitch":
            raise ValueError("ingest_client_id_tags is for test servers: not with irc_flavor twitch")
        return self

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
