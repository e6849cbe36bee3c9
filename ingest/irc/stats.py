"""What the pool reports about itself (``IrcPool.stats()``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PoolStats:
    connections: int  # open connections (connecting + ready + draining)
    connections_connecting: int
    connections_ready: int
    connections_draining: int
    wanted: int
    confirmed: int
    pending_joins: int
    homeless: int  # wanted channels neither joined nor pending on a READY connection (last reconcile)
    blocked: int  # channels in JOIN-failure backoff
    reconnects: int  # connections lost without our asking, RECONNECT requests included
    join_timeouts: int  # JOINs given up on a connection after every retry
    joins_sent: int
    parts_sent: int
    lines_read: int  # lines handed to on_lines
    bytes_read: int
    nick_collisions: int
    decode_errors: int  # chunks with invalid UTF-8 (decoded with U+FFFD, not dropped)
    over_capacity: int = 0  # wanted channels not joined: the worker is at CHATLOG_INGEST_MAX_CHANNELS
    msgs_per_s: float = 0.0  # message rate of the joined channels (measured, decayed)
    max_conn_msgs_per_s: float = 0.0  # the busiest connection's rate
    moves: int = 0  # channels moved between connections for load (started)
    moves_failed: int = 0  # moves whose JOIN on the target failed (the source kept the channel)
    cpu_s_per_msg: float = 0.0  # process CPU seconds per line read, over the last few seconds
