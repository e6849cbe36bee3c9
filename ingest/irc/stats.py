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
