"""Settings of the HTTP service (``chatlog serve``).

Every key is a ``CHATLOG_*`` environment variable documented here with its default; ``--host``,
``--port`` and ``--workers`` override theirs. Cassandra keys come from
:class:`core.settings.CassandraSettings`.
"""

from __future__ import annotations

import os
from typing import Final, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, SecretStr, field_validator

from core.settings import CassandraSettings, KafkaSettings, PortOrZero

ADMIN_KEY_MIN: Final = 16


class ServeSettings(CassandraSettings):
    """``chatlog serve``: the justlog/rustlog HTTP API on the logs in Cassandra."""

    serve_host: str = Field(
        "127.0.0.1",
        min_length=1,
        pattern=r"^\S+$",
        description="Address the HTTP service listens on (0.0.0.0: every interface, said explicitly).",
    )
    serve_port: PortOrZero = Field(8025, description="Port the HTTP service listens on (0: any).")
    serve_workers: int = Field(
        0,
        ge=0,
        le=1024,
        description="Processes answering requests on the one listening socket (uvicorn's workers, "
        "serve/api/workers.py); 0: one per CPU this process may run on (its CPU affinity); 1: a single "
        "process.",
    )
    serve_fetch_size: int = Field(
        100,
        ge=1,
        le=10_000,
        description="Blocks per Cassandra page while streaming a response (a block holds the lines of one "
        "micro-batch of a channel or user: from one to thousands).",
    )
    serve_channels_ttl_s: NonNegativeFloat = Field(
        60.0,
        description="Seconds the channel list and the name lookups (login to id, id to logins) are cached.",
    )
    serve_request_timeout_s: PositiveFloat = Field(
        10.0, description="Timeout of one Cassandra request made by the service."
    )
    serve_log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = Field(
        "info", description="uvicorn's log level."
    )
    serve_search_max_query_chars: int = Field(
        200, ge=1, le=10_000, description="Longest search query (`q`) accepted; longer is a 400."
    )
    serve_search_max_days: int = Field(
        7,
        ge=1,
        le=3660,
        description=(
            "Longest time range (days) one channel search scans (`from`..`to`); longer is a 400. A scan "
            "reads every line of the range: a 200k-line day took 12-26 s on the loaded local stack."
        ),
    )
    serve_admin_key: SecretStr | None = Field(
        default=None,
        description=(
            "Bearer key (16+ characters) of the admin routes (a user's lines across every channel, "
            "`/admin/user/{u}/search`); "
            "unset: those routes answer 403 (secret)."
        ),
    )
    serve_search_default_days: int = Field(
        1,
        ge=1,
        le=3660,
        description="Range (days, ending at `to`, else now) of a channel search without `from`.",
    )

    def worker_count(self) -> int:
        """:attr:`serve_workers`, 0 being the CPUs this process may run on (``os.sched_getaffinity``)."""
        return self.serve_workers or len(os.sched_getaffinity(0))

    @field_validator("serve_admin_key")
    @classmethod
    def _admin_key_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        """A bearer key is guessed by trying: 16 characters at least."""
        if value is not None and len(value.get_secret_value()) < ADMIN_KEY_MIN:
            raise ValueError(
                f"must be at least {ADMIN_KEY_MIN} characters (it has {len(value.get_secret_value())})"
            )
        return value


class LiveSettings(KafkaSettings):
    """``chatlog serve``'s live route (``/api/live/{channel}``): one Kafka consumer of ``chatlog.messages``
    per process, fanned out to the Server-Sent Events subscribers."""

    serve_live_queue: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description=(
            "Events waiting for one live subscriber; a subscriber that falls this far behind is dropped."
        ),
    )
    serve_live_dedup_window: int = Field(
        100_000,
        ge=1,
        le=10_000_000,
        description=(
            "Recent message ids remembered to drop the second copy of each event (the replica groups each "
            "log it, seconds apart): at least the message rate times the copies' skew."
        ),
    )
    serve_live_max_subscribers: int = Field(
        1000, ge=1, le=1_000_000, description="Live subscribers at once per process; more are a 503."
    )
    serve_live_ping_s: float = Field(
        15.0, gt=0, le=3600, description="Seconds between keep-alive comments of a live stream."
    )
    serve_live_connect_timeout_s: float = Field(
        5.0, gt=0, le=120, description="Seconds the first live subscriber waits for Kafka before a 503."
    )


class FreshSettings(KafkaSettings):
    """Fresh reads (``chatlog serve``, ``chatlog logs``): recent events that Kafka holds and the sink has not
    written yet are answered with the stored ones (serve/unwritten.py)."""

    serve_fresh: bool = Field(
        True,
        description="Answer a read that reaches the present with the channel's events in Kafka beyond "
        "what the sink has written (false: Cassandra only).",
    )
    serve_fresh_max_records: int = Field(
        200_000,
        ge=1,
        le=10_000_000,
        description="Kafka records read at most per request from the channel's partition (the newest, "
        "when the sink is further behind).",
    )
    serve_fresh_timeout_s: float = Field(
        2.0, gt=0, le=60, description="Seconds a request spends at most reading Kafka for unwritten events."
    )
