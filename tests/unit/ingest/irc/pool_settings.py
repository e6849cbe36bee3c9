"""Pool settings for the tests against the in-process IRC server (:mod:`ingest.irc.testing`): its port,
fast joins, short timeouts and backoffs."""

from __future__ import annotations

from typing import Any

from core.settings import load
from ingest.irc import PoolSettings


def settings(port: int, **overrides: Any) -> PoolSettings:
    base: dict[str, Any] = {
        "irc_host": "127.0.0.1",
        "irc_port": port,
        "irc_tls": False,
        "irc_flavor": "ircv3",
        "irc_join_rate": 1000,
        "irc_join_ack_timeout_s": 0.3,
        "irc_ping_interval_s": 30.0,
        "irc_ping_timeout_s": 5.0,
        "irc_reconnect_backoff_min_s": 0.05,
        "irc_reconnect_backoff_max_s": 0.2,
        "irc_connect_timeout_s": 5.0,
    }
    return load(PoolSettings, **(base | overrides))
