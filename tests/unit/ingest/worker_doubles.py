"""Doubles of what the ingest worker is given besides Kafka (which :mod:`core.testing` doubles): the IRC
pool, the confirmation watch and the metrics server; :data:`CHANNELS` is the channel topic they are run
with."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from ingest.irc.pool import OnLines
from ingest.irc.stats import PoolStats

CHANNELS = "t.channels"


class PoolDouble:
    """The IRC pool, as a server that echoes every JOIN at once: what is wanted is confirmed."""

    def __init__(self, on_lines: OnLines) -> None:
        self.on_lines = on_lines
        self.wanted: frozenset[str] = frozenset()
        self.over_capacity: frozenset[str] = frozenset()
        self.confirmed: frozenset[str] = frozenset()
        self.membership_version = 0
        self.membership_moved = asyncio.Event()
        self.changes: list[frozenset[str]] = []
        self.closed_with_part: bool | None = None
        self.paused = False
        self.server_up = True  # False: no connection, so no JOIN is ever echoed
        self._closed = asyncio.Event()

    def set_wanted(self, channels: AbstractSet[str]) -> None:
        self.wanted = frozenset(channels)
        if self.wanted != self.confirmed:
            self.changes.append(self.wanted)
            self.confirmed = self.wanted if self.server_up else frozenset()
            self.membership_version += 1
            self.membership_moved.set()

    async def run(self) -> None:
        await self._closed.wait()

    async def close(self, *, part: bool = True) -> None:
        self.closed_with_part = part
        self.confirmed = frozenset()
        self.membership_version += 1
        self.membership_moved.set()
        self._closed.set()

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def stats(self) -> PoolStats:
        return PoolStats(
            connections=1, connections_connecting=0, connections_ready=1, connections_draining=0,
            wanted=len(self.wanted), confirmed=len(self.confirmed), pending_joins=0, homeless=0, blocked=0,
            reconnects=0, join_timeouts=0, joins_sent=len(self.confirmed), parts_sent=0, lines_read=0,
            bytes_read=0, nick_collisions=0, decode_errors=0,
        )  # fmt: skip


@dataclass
class WatchDouble:
    """The confirmation watch: the test confirms channels on the membership itself, as the watch would."""

    failure: BaseException | None = None
    started: bool = False
    closed: bool = False

    def start(self, timeout: float = 15.0) -> None:
        self.started = True

    def close(self, timeout: float = 10.0) -> None:
        self.closed = True


@dataclass
class MetricsDouble:
    """The metrics server: records each registry it serves and its readiness check."""

    port: int = 9999
    registries: list[CollectorRegistry] = field(default_factory=list)
    ready: list[Callable[[], bool]] = field(default_factory=list)
    stopped: bool = False

    def serve(self, registry: CollectorRegistry, ready: Callable[[], bool]) -> MetricsDouble:
        self.registries.append(registry)
        self.ready.append(ready)
        return self

    def stop(self) -> None:
        self.stopped = True
