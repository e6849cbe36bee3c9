"""The monitor's view from heartbeats: pure, no Kafka, no clock of its own.

Inputs are what the faust tables hold (the registry and the latest heartbeat per worker) plus ``now``;
the output says, per replica, which registered channels no live ingester confirms, since when, and who
owns which bucket. A worker is live when its latest heartbeat says ``running`` and is at most
``stale_s`` old (:func:`ingest.status.fresh`, the same rule as ``chatlog status``).

*Since when* a channel is uncovered: if it was already uncovered at the previous evaluation, that
time is kept (``previous_since``). Otherwise it is the last moment a now-dead worker of the replica
confirmed it (its last heartbeat listing the channel), but not before the channel was (re-)added;
without such evidence it is ``now``. So after a crash the age counts from the crash, and a monitor
restarted later still reports the right age for channels of workers that died before it started.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ingest.status import Heartbeat, fresh, heartbeat_view

SinceKey = tuple[int, str]
"""(replica, channel)"""


@dataclass(frozen=True)
class Channel:
    """A registered channel: its login, its bucket (partition of the registry topic), when it was added."""

    login: str
    bucket: int
    added_at: int = 0


@dataclass(frozen=True)
class Uncovered:
    channel: str
    bucket: int
    since_ms: int


@dataclass(frozen=True)
class DeadWorker:
    """A worker whose latest heartbeat is stale or says it stopped."""

    worker_id: str
    state: str
    last_seen_ms: int


@dataclass
class ReplicaReport:
    """How one replica (consumer group) covers the registry."""

    replica: int
    registered: int
    confirmed: int
    live_workers: int
    uncovered: list[Uncovered] = field(default_factory=list)
    owners: dict[str, list[int]] = field(default_factory=dict)
    overlap: dict[str, list[int]] = field(default_factory=dict)
    unowned_buckets: list[int] = field(default_factory=list)
    dead_workers: list[DeadWorker] = field(default_factory=list)
    unregistered_joined: int = 0
    events_per_s: float = 0.0

    def longest_uncovered_s(self, now_ms: int) -> float:
        """Age in seconds of the oldest uncovered channel; 0 when everything is covered."""
        if not self.uncovered:
            return 0.0
        return max(0.0, (now_ms - min(u.since_ms for u in self.uncovered)) / 1000)


@dataclass
class HeartbeatReport:
    now_ms: int
    registered: int
    replicas: list[ReplicaReport]
    since: dict[SinceKey, int]
    """Uncovered-since of every uncovered (replica, channel): the ``previous_since`` of the next call."""

    @property
    def ok(self) -> bool:
        return all(not r.uncovered for r in self.replicas)


def evaluate(
    channels: Mapping[str, Channel],
    heartbeats: Iterable[Heartbeat],
    *,
    now_ms: int,
    stale_s: float,
    forget_s: float = float("inf"),
    replicas: Iterable[int] = (0,),
    previous_since: Mapping[SinceKey, int] | None = None,
) -> HeartbeatReport:
    """Per replica: uncovered channels (with since when), live workers, bucket owners, dead workers.

    Reported replicas are ``replicas`` (default: replica 0) plus every replica that has a heartbeat
    younger than ``forget_s``; heartbeats older than that are ignored altogether.
    """
    previous = previous_since or {}
    forget_bound = now_ms - forget_s * 1000
    beats = [hb for hb in heartbeats if hb.sent_at >= forget_bound]
    live = fresh(beats, now_ms=now_ms, stale_s=stale_s)
    live_ids = {id(hb) for hb in live}
    dead = [hb for hb in beats if id(hb) not in live_ids]
    wanted = sorted(set(replicas) | {hb.replica for hb in beats})
    since: dict[SinceKey, int] = {}
    out = []
    for base in heartbeat_view(channels.keys(), live, replicas=wanted):
        r = base.replica
        dead_here = sorted((hb for hb in dead if hb.replica == r), key=lambda hb: hb.worker_id)
        last_confirmed = _last_confirmed(set(base.uncovered), dead_here)
        uncovered = []
        for login in base.uncovered:
            channel = channels[login]
            began = previous.get((r, login))
            if began is None:
                evidence = last_confirmed.get(login)
                began = now_ms if evidence is None else min(now_ms, max(evidence, channel.added_at))
            since[(r, login)] = began
            uncovered.append(Uncovered(login, channel.bucket, began))
        uncovered.sort(key=lambda u: (u.since_ms, u.channel))
        owned = {b for hb in live if hb.replica == r for b in hb.buckets}
        out.append(
            ReplicaReport(
                replica=r,
                registered=base.registered,
                confirmed=base.confirmed,
                live_workers=len(base.owners),
                uncovered=uncovered,
                owners=base.owners,
                overlap=base.overlap,
                unowned_buckets=sorted({c.bucket for c in channels.values()} - owned),
                dead_workers=[DeadWorker(hb.worker_id, hb.state, hb.sent_at) for hb in dead_here],
                unregistered_joined=base.unregistered_joined,
                events_per_s=base.events_per_s,
            )
        )
    return HeartbeatReport(now_ms=now_ms, registered=len(channels), replicas=out, since=since)


def _last_confirmed(uncovered: set[str], dead: Iterable[Heartbeat]) -> dict[str, int]:
    """channel -> the latest ``sent_at`` of a dead worker's heartbeat that confirmed it."""
    out: dict[str, int] = {}
    for hb in dead:
        for login in uncovered.intersection(hb.confirmed):
            if hb.sent_at > out.get(login, -1):
                out[login] = hb.sent_at
    return out


def report_json(
    report: HeartbeatReport, *, limit: int | None = None, ready: bool = True
) -> dict[str, object]:
    """The body of ``GET /coverage``: ``limit`` caps the uncovered channels listed per replica."""
    now = report.now_ms
    return {
        "ready": ready,
        "ok": report.ok,
        "generated_at": now,
        "registered": report.registered,
        "replicas": [
            {
                "replica": r.replica,
                "registered": r.registered,
                "confirmed": r.confirmed,
                "live_workers": r.live_workers,
                "uncovered_count": len(r.uncovered),
                "longest_uncovered_s": round(r.longest_uncovered_s(now), 3),
                "uncovered": [
                    {
                        "channel": u.channel,
                        "bucket": u.bucket,
                        "since": u.since_ms,
                        "seconds": round(max(0, now - u.since_ms) / 1000, 3),
                    }
                    for u in (r.uncovered if limit is None else r.uncovered[:limit])
                ],
                "owners": r.owners,
                "overlap": r.overlap,
                "unowned_buckets": r.unowned_buckets,
                "dead_workers": [
                    {"worker_id": d.worker_id, "state": d.state, "last_seen": d.last_seen_ms}
                    for d in r.dead_workers
                ],
                "unregistered_joined": r.unregistered_joined,
                "events_per_s": round(r.events_per_s, 1),
            }
            for r in report.replicas
        ],
    }
