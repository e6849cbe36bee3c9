"""Heartbeats on ``chatlog.status`` and the per-replica view of ``chatlog status`` built from them.

Each ingester produces a :class:`Heartbeat` every ``ingest_heartbeat_s`` under the key
``r<replica>/<worker id>`` (the topic is compacted, so the latest per worker stays). It lists every
channel the IRC server confirmed (a heartbeat of 25k channels is ~300 KB of JSON; the producer
compresses it and allows 16 MB). On a graceful exit it sends ``state = "stopped"`` and then a
tombstone.

:func:`heartbeat_view` is pure: registered channels and fresh heartbeats in, per replica the confirmed
and unconfirmed channels out (what the heartbeats say; the coverage ledger is :mod:`serve.coverage`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Final

import msgspec

from core.compacted import fold, read_to_end
from core.settings import KafkaSettings

RUNNING: Final = "running"
STOPPED: Final = "stopped"


class Heartbeat(msgspec.Struct, kw_only=True):
    """The value of one status record."""

    worker_id: str
    replica: int
    host: str
    pid: int
    started_at: int
    sent_at: int
    state: str = RUNNING
    buckets: list[int] = msgspec.field(default_factory=list)
    overlap_buckets: list[int] = msgspec.field(default_factory=list)
    loading_buckets: list[int] = msgspec.field(default_factory=list)
    wanted: int = 0
    confirmed: list[str] = msgspec.field(default_factory=list)
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    rates: dict[str, float] = msgspec.field(default_factory=dict)
    metrics_port: int | None = None
    """Port of the worker's /metrics and /ready on ``host`` (a free one when the default was taken)."""
    max_channels: int | None = None
    """The worker's capacity (``CHATLOG_INGEST_MAX_CHANNELS``); None = no limit."""
    over_capacity: list[str] = msgspec.field(default_factory=list)
    """Channels of its buckets the worker does not join: it is full (add workers)."""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Heartbeat).decode


def status_key(replica: int, worker_id: str) -> str:
    return f"r{replica}/{worker_id}"


def encode_heartbeat(hb: Heartbeat) -> bytes:
    return _encode(hb)


def decode_heartbeat(value: bytes) -> Heartbeat | None:
    try:
        return _decode(value)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def fresh(heartbeats: Iterable[Heartbeat], *, now_ms: int, stale_s: float) -> list[Heartbeat]:
    """Heartbeats of running workers sent within ``stale_s`` of ``now_ms``."""
    bound = now_ms - int(stale_s * 1000)
    return [hb for hb in heartbeats if hb.state == RUNNING and hb.sent_at >= bound]


def read_heartbeats(settings: KafkaSettings, *, since_ms: int, timeout: float = 30.0) -> list[Heartbeat]:
    """The latest heartbeat of every worker that sent one since ``since_ms`` (only that tail is read:
    a busy status topic holds up to an hour of 300 KB heartbeats before compaction)."""
    latest = fold(read_to_end(settings, settings.topic_status, timeout=timeout, since_ms=since_ms))
    return [hb for value in latest.values() if (hb := decode_heartbeat(value)) is not None]


@dataclass
class ReplicaHeartbeats:
    """What the heartbeats of one replica (consumer group) say of the registered channels."""

    replica: int
    registered: int
    confirmed: int
    owners: dict[str, list[int]] = field(default_factory=dict)
    overlap: dict[str, list[int]] = field(default_factory=dict)
    uncovered: list[str] = field(default_factory=list)
    unregistered_joined: int = 0
    events_per_s: float = 0.0
    metrics: dict[str, str] = field(default_factory=dict)
    """worker id -> ``host:port`` of its /metrics (workers that sent the port)."""
    over_capacity: dict[str, int] = field(default_factory=dict)
    """worker id -> channels it owns but does not join (at its capacity), for workers with any."""
    capacity: dict[str, int] = field(default_factory=dict)
    """worker id -> its channel capacity, for workers that have one."""

    @property
    def ok(self) -> bool:
        return not self.uncovered


def heartbeat_view(
    registered: Collection[str], heartbeats: Iterable[Heartbeat], replicas: Iterable[int] | None = None
) -> list[ReplicaHeartbeats]:
    """Per replica: registered vs confirmed channels, who owns which bucket, who logs nothing.

    ``replicas`` defaults to the replicas that have heartbeats (replica 0 when there are none).
    """
    by_replica: dict[int, list[Heartbeat]] = {}
    for hb in heartbeats:
        by_replica.setdefault(hb.replica, []).append(hb)
    wanted = sorted(set(replicas) if replicas is not None else (set(by_replica) or {0}))
    registered_set = set(registered)
    out = []
    for r in wanted:
        beats = sorted(by_replica.get(r, []), key=lambda hb: hb.worker_id)
        joined: set[str] = set()
        for hb in beats:
            joined.update(hb.confirmed)
        out.append(
            ReplicaHeartbeats(
                replica=r,
                registered=len(registered_set),
                confirmed=len(registered_set & joined),
                owners={hb.worker_id: sorted(hb.buckets) for hb in beats},
                overlap={hb.worker_id: sorted(hb.overlap_buckets) for hb in beats if hb.overlap_buckets},
                uncovered=sorted(registered_set - joined),
                unregistered_joined=len(joined - registered_set),
                events_per_s=sum(hb.rates.get("events", 0.0) for hb in beats),
                metrics={hb.worker_id: f"{hb.host}:{hb.metrics_port}" for hb in beats if hb.metrics_port},
                over_capacity={hb.worker_id: len(hb.over_capacity) for hb in beats if hb.over_capacity},
                capacity={hb.worker_id: hb.max_channels for hb in beats if hb.max_channels is not None},
            )
        )
    return out


def report_json(report: list[ReplicaHeartbeats], *, limit: int | None = None) -> dict[str, object]:
    """The machine-readable report (``chatlog status --json``)."""
    return {
        "ok": all(c.ok for c in report),
        "replicas": [
            {
                "replica": c.replica,
                "registered": c.registered,
                "confirmed": c.confirmed,
                "uncovered_count": len(c.uncovered),
                "uncovered": c.uncovered[:limit] if limit is not None else c.uncovered,
                "owners": c.owners,
                "overlap": c.overlap,
                "unregistered_joined": c.unregistered_joined,
                "events_per_s": round(c.events_per_s, 1),
                "metrics": c.metrics,
                "over_capacity": c.over_capacity,
                "over_capacity_count": sum(c.over_capacity.values()),
                "capacity": c.capacity,
            }
            for c in report
        ],
    }


def report_text(report: list[ReplicaHeartbeats], *, show: int = 20) -> str:
    """The human report: one block per replica."""
    lines = []
    for c in report:
        state = "ok" if c.ok else f"{len(c.uncovered)} UNCOVERED"
        lines.append(
            f"replica {c.replica}: {c.confirmed}/{c.registered} channels confirmed, {state}, "
            f"{len(c.owners)} worker(s), {c.events_per_s:.1f} events/s"
        )
        for worker, buckets in c.owners.items():
            extra = f" (+ overlap {c.overlap[worker]})" if worker in c.overlap else ""
            extra += f", metrics {c.metrics[worker]}" if worker in c.metrics else ""
            if worker in c.capacity:
                extra += f", capacity {c.capacity[worker]}"
            if worker in c.over_capacity:
                extra += f", {c.over_capacity[worker]} OVER CAPACITY"
            lines.append(f"  {worker}: {len(buckets)} bucket(s) {_ranges(buckets)}{extra}")
        if c.uncovered:
            more = f" ... and {len(c.uncovered) - show} more" if len(c.uncovered) > show else ""
            lines.append(f"  nobody logs: {', '.join(c.uncovered[:show])}{more}")
        if c.over_capacity:
            lines.append(
                f"  over capacity: {sum(c.over_capacity.values())} channel(s) not joined by their owner "
                "(CHATLOG_INGEST_MAX_CHANNELS): add workers"
            )
        if c.unregistered_joined:
            lines.append(f"  joined but not registered (leaving soon): {c.unregistered_joined}")
    return "\n".join(lines)


def _ranges(values: list[int]) -> str:
    """``[0-3,7,9-10]``"""
    parts: list[str] = []
    for v in values:
        if parts and v == int(parts[-1].rsplit("-", 1)[-1]) + 1:
            start = parts[-1].split("-")[0]
            parts[-1] = f"{start}-{v}"
        else:
            parts.append(str(v))
    return "[" + ",".join(parts) + "]"
