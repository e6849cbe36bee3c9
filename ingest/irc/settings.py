"""Settings of the IRC connection pool (``CHATLOG_IRC_*``), on top of the server settings."""

from __future__ import annotations

from pydantic import Field, NonNegativeFloat, PositiveFloat, model_validator

from core.settings import IrcSettings


class PoolSettings(IrcSettings):
    """How one ingester process spreads its channels over IRC connections."""

    irc_channels_per_connection: int = Field(
        default=90, ge=1, le=100_000, description="Most channels joined (or being joined) per connection."
    )
    irc_join_rate: int = Field(
        default=20,
        ge=1,
        description="JOINs allowed per window per account (Twitch: 20; verified bots: 2000).",
    )
    irc_join_window_s: PositiveFloat = Field(
        default=10.0, description="Sliding window of the JOIN rate limit, s."
    )
    irc_join_ack_timeout_s: PositiveFloat = Field(
        default=10.0, description="A JOIN not echoed by the server within this many seconds is retried."
    )
    irc_join_retries: int = Field(
        default=2,
        ge=0,
        description="JOIN retries on the same connection before the channel moves to a fresh one.",
    )
    irc_join_failure_backoff_s: PositiveFloat = Field(
        default=60.0,
        description="A channel that also failed on a fresh connection (or was refused) waits this long, "
        "doubling per failure up to 1 h, before it is tried again.",
    )
    irc_ping_interval_s: PositiveFloat = Field(
        default=60.0, description="Send PING after this many seconds without data from the server."
    )
    irc_ping_timeout_s: PositiveFloat = Field(
        default=20.0, description="Reconnect when nothing arrives within this many seconds after our PING."
    )
    irc_connect_timeout_s: PositiveFloat = Field(
        default=30.0, description="TCP + TLS + IRC registration (up to 001) must finish within this, s."
    )
    irc_reconnect_backoff_min_s: PositiveFloat = Field(
        default=1.0, description="First delay before opening connections again after a failure, s."
    )
    irc_reconnect_backoff_max_s: PositiveFloat = Field(
        default=60.0, description="Largest reconnect delay; it doubles per failure in a row, with jitter."
    )
    irc_drain_timeout_s: PositiveFloat = Field(
        default=300.0,
        description="After RECONNECT, the old connection closes once its channels are joined elsewhere, "
        "or after this many seconds.",
    )
    irc_max_connections: int = Field(default=5000, ge=1, description="Most IRC connections of one process.")
    irc_nick_max_len: int = Field(
        default=30, ge=9, le=512, description="Longest nick the server accepts (NICKLEN)."
    )
    irc_read_interval_ms: float = Field(
        default=100.0,
        ge=0,
        le=1000,
        description="Each IRC connection is read at most once per this many ms, the lines that arrived "
        "meanwhile handled as one batch (ingest/irc/read_tick.py): the cost of a read is paid per read, not "
        "per line. Adds up to this much to a line's way to Kafka; 0 reads on every readiness event.",
    )
    irc_max_line_bytes: int = Field(
        default=1 << 20,
        ge=512,
        description="A longer line is skipped up to its line end (counted and logged, never held in "
        "memory); the connection stays up.",
    )

    ingest_max_channels: int | None = Field(
        default=None,
        ge=1,
        description="Most channels this worker joins (its capacity; unset = no limit). Assigned more, it "
        "joins the hottest (channels already joined keep their place) and reports the rest as "
        "over_capacity (heartbeat, chatlog status, chatlog_irc_channels_over_capacity) for an operator or "
        "an autoscaler to add workers.",
    )
    irc_max_msgs_per_conn: PositiveFloat = Field(
        default=1500.0,
        description="Message rate (msg/s, measured, decayed over ~1 min) above which a connection moves its "
        "hottest channel that fits to another connection, make-before-break (JOIN there, PART here once "
        "the JOIN is echoed).",
    )
    irc_rebalance_ratio: NonNegativeFloat = Field(
        default=1.25,
        description="A connection above this many times the mean rate of the worker's connections also "
        "moves a channel (when that is below CHATLOG_IRC_MAX_MSGS_PER_CONN); 0 = the ceiling only.",
    )
    irc_move_cooldown_s: NonNegativeFloat = Field(
        default=120.0,
        description="A channel moves between connections, and a connection gives one away, at most once "
        "per this many seconds (no flapping).",
    )

    @model_validator(mode="after")
    def _backoff_order(self) -> PoolSettings:
        if self.irc_reconnect_backoff_max_s < self.irc_reconnect_backoff_min_s:
            raise ValueError("irc_reconnect_backoff_max_s must be >= irc_reconnect_backoff_min_s")
        return self
