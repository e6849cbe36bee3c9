"""Settings of ``chatlog monitor``: Kafka (topics included) plus what the monitor itself needs.

Every key is a ``CHATLOG_*`` environment variable (``monitor_web_port`` is ``CHATLOG_MONITOR_WEB_PORT``);
flags of the command override them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, field_validator

from core.settings import KafkaSettings, Port


class MonitorSettings(KafkaSettings):
    """The heartbeat monitor: a faust app over ``chatlog.status`` and ``chatlog.channels``."""

    monitor_app_id: str = Field(
        "chatlog-monitor",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$",
        description="faust app id: its consumer group and the prefix of its changelog topics.",
    )
    monitor_replicas: int = Field(
        1,
        ge=0,
        le=1000,
        description="Replicas 0..N-1 are always reported, even with no heartbeat at all "
        "(replicas seen in heartbeats are reported too).",
    )
    monitor_stale_s: PositiveFloat = Field(
        10.0, description="A heartbeat older than this many seconds means its worker is dead."
    )
    monitor_forget_s: PositiveFloat = Field(
        3600.0,
        description="Heartbeats older than this are ignored entirely (dead workers are no longer listed); "
        "the default is the status topic's retention.",
    )
    monitor_interval_s: PositiveFloat = Field(
        5.0, description="Seconds between evaluations of the heartbeats."
    )
    monitor_catch_up_s: PositiveFloat = Field(
        120.0,
        description="The first report waits until the agents have folded the source topics up to their "
        "end offsets at start (so no live worker looks dead); at most this many seconds.",
    )
    monitor_report_limit: int = Field(
        1000, ge=0, description="Uncovered channels listed per replica in /coverage (`?limit=N` overrides)."
    )
    monitor_web_port: Port = Field(6066, description="faust web server port (/coverage).")
    monitor_web_bind: str = Field("0.0.0.0", description="Address the faust web server listens on.")
    monitor_metrics_port: Port = Field(9102, description="Prometheus metrics port.")
    monitor_metrics_host: str = Field("0.0.0.0", description="Address the metrics endpoint listens on.")
    monitor_data_dir: Path = Field(
        Path(tempfile.gettempdir()) / "chatlog-monitor",
        description="faust's data directory (tables live in memory; faust still wants a directory); made "
        "at start if missing.",
    )
    monitor_log_level: Literal["debug", "info", "warning", "error"] = Field(
        "warning", description="Log level of faust itself (the monitor's own lines are logged at info)."
    )

    @field_validator("monitor_data_dir")
    @classmethod
    def _no_braces(cls, value: Path) -> Path:
        if "{" in str(value) or "}" in str(value):
            raise ValueError("no { or } (faust expands {conf...} fields in it)")
        return value
