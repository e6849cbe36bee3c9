"""Consumer-group membership: which buckets (channel-topic partitions) this ingester owns, and so
which channels it wants.

:class:`BucketTable` is the pure bookkeeping (an injected clock, no Kafka): buckets are assigned
(loading until their partition has been read up to the end it had at assignment), loaded, revoked into a
hand-off overlap, or lost.
The wanted set is the union of the channels of loaded owned buckets and of buckets still in overlap.
A revoked bucket's channel leaves the overlap when the new owner confirms its JOIN of it
(:meth:`BucketTable.confirm`, fed from ``chatlog.coverage``), or when the hand-off timeout passes:
then it is parted without a confirmation, counted and logged as a gap risk.

:class:`Membership` runs a confluent-kafka consumer in its own thread (:mod:`core.background_consumer`).
The group member follows its buckets with a long fetch wait (``core.compacted.FOLLOW_FETCH_WAIT_MS``: an idle
member's fetches are most of what it costs the broker), so it is never the one that reads a new bucket:
librdkafka sends a broker one fetch at a time, and a bucket assigned while the member's fetch waits would be
read only when that wait ends. A second consumer, outside the group and holding nothing between
rebalances (so it sends nothing), reads each newly assigned bucket from its beginning up to the end offset it
had at assignment, at librdkafka's default wait; the member follows the bucket from that offset on, and what
it reads of a bucket still loading is held until the loader is done.
The rebalance callbacks live here, in one place; each one only records what changed in the table, and is
wrapped so an error does not escape into librdkafka: it is counted and stops the member
(:class:`RebalanceFailed` in ``failure``), so the worker exits non-zero and is restarted instead of owning
buckets it does not log. After every poll the thread publishes a :class:`Snapshot` when the table changed;
the worker hands it to its asyncio loop.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from core.background_consumer import BackgroundConsumer
from core.compacted import FOLLOW_FETCH_WAIT_MS, reader_config
from core.errors import one_line
from core.settings import KafkaSettings
from ingest.metrics import counter

log = logging.getLogger(__name__)

_POLL_BATCH: Final = 2000
_POLL_TIMEOUT_S: Final = 0.25
"""A record ends a poll's wait at once, a rebalance does not: this bounds how soon a bucket assigned in
the middle of a wait starts to count, and how soon stop() is seen."""
_LOADING_POLL_S: Final = 0.05
"""Each consumer's wait while a bucket loads: the loop polls the member and the loader in turn."""
_ENDS_TIMEOUT_S: Final = 10.0
"""How long a newly assigned bucket's end offset may take to read (a failure stops the member)."""


@dataclass(frozen=True)
class Snapshot:
    """What the worker needs to know, at one moment."""

    version: int
    owned: tuple[int, ...]
    loading: tuple[int, ...]
    overlap: tuple[int, ...]
    wanted: frozenset[str]


@dataclass
class _Overlap:
    channels: set[str]
    until: float


@dataclass
class BucketTable:
    """Owned buckets with their channels, and revoked buckets kept until their new owner confirms."""

    handoff_timeout_s: float
    owned: dict[int, set[str]] = field(default_factory=dict)
    loading: set[int] = field(default_factory=set)
    overlap: dict[int, _Overlap] = field(default_factory=dict)
    version: int = 0
    handed_off: set[str] = field(default_factory=set)
    """Channels released by a confirmation since the last :meth:`take_handed_off`."""
    timed_out: int = 0
    """Channels parted because the hand-off timeout passed without a confirmation (gap risk)."""

    def assign(self, buckets: Iterable[int]) -> None:
        """New buckets: read from the beginning; they count once :meth:`loaded` says the end was reached."""
        for b in buckets:
            self.owned[b] = set()
            self.loading.add(b)
        self.version += 1

    def loaded(self, bucket: int) -> None:
        """The end of the bucket's partition was reached: its channels are wanted from now on."""
        if bucket in self.loading:
            self.loading.discard(bucket)
            self.overlap.pop(bucket, None)  # we own it again: the overlap copy is superseded
            self.version += 1

    def apply(self, bucket: int, login: str, present: bool) -> None:
        """A record of an owned bucket: a channel added (``present``) or removed (tombstone)."""
        channels = self.owned.get(bucket)
        if channels is None:
            return
        if present:
            if login in channels:
                return
            channels.add(login)
        else:
            if login not in channels:
                return
            channels.discard(login)
        if bucket not in self.loading:
            self.version += 1

    def revoke(self, buckets: Iterable[int], now: float) -> None:
        """Cooperative revocation: keep logging the bucket's channels until the new owner confirms each
        (:meth:`confirm`), at most until ``now + handoff_timeout_s``."""
        for b in buckets:
            channels = self.owned.pop(b, None)
            was_loading = b in self.loading
            self.loading.discard(b)
            if channels and not was_loading and self.handoff_timeout_s > 0:
                self.overlap[b] = _Overlap(set(channels), now + self.handoff_timeout_s)
        self.version += 1

    def confirm(self, channels: Iterable[str]) -> None:
        """Another worker of this replica group confirmed its JOIN of ``channels``: release them."""
        wanted = set(channels)
        for b in list(self.overlap):
            o = self.overlap[b]
            released = o.channels & wanted
            if not released:
                continue
            o.channels -= released
            self.handed_off |= released
            if not o.channels:
                del self.overlap[b]
            self.version += 1

    def take_handed_off(self) -> set[str]:
        out, self.handed_off = self.handed_off, set()
        return out

    @property
    def overlap_channels(self) -> int:
        return sum(len(o.channels) for o in self.overlap.values())

    def lose(self, buckets: Iterable[int]) -> None:
        """The session expired: someone else owns these already; stop at once (no overlap)."""
        for b in buckets:
            self.owned.pop(b, None)
            self.loading.discard(b)
            self.overlap.pop(b, None)
        self.version += 1

    def expire(self, now: float) -> None:
        """Drop overlaps whose time is up: their channels go unconfirmed (a gap risk, logged)."""
        done = [b for b, o in self.overlap.items() if o.until <= now]
        for b in done:
            o = self.overlap.pop(b)
            self.timed_out += len(o.channels)
            log.warning(
                "hand-off of bucket %d timed out after %.0fs: parting %d channels the new owner has not "
                "confirmed (gap risk: %s)",
                b, self.handoff_timeout_s, len(o.channels), ", ".join(sorted(o.channels)[:5]),
            )  # fmt: skip
        if done:
            self.version += 1

    def wanted(self) -> frozenset[str]:
        out: set[str] = set()
        for b, channels in self.owned.items():
            if b not in self.loading:
                out |= channels
        for o in self.overlap.values():
            out |= o.channels
        return frozenset(out)

    def snapshot(self) -> Snapshot:
        return Snapshot(
            version=self.version,
            owned=tuple(sorted(self.owned)),
            loading=tuple(sorted(self.loading)),
            overlap=tuple(sorted(self.overlap)),
            wanted=self.wanted(),
        )


@dataclass
class MembershipStats:
    """What the member's rebalances did since it started; some counts are exported as counters."""

    rebalances: int = counter("chatlog_ingest_rebalances", "Rebalance callbacks that changed the assignment.")
    assigned: int = 0
    """Buckets assigned, over every rebalance."""
    revoked: int = 0
    """Buckets revoked (kept until their channels' new owners confirm them), over every rebalance."""
    lost: int = counter("chatlog_ingest_buckets_lost", "Buckets lost (session expired).")
    callback_errors: int = counter(
        "chatlog_ingest_rebalance_callback_errors", "Errors in rebalance callbacks."
    )
    consumer_errors: int = 0
    """Errors the channel topic's consumer reported (each one logged)."""


def consumer_config(
    base: dict[str, Any], *, group_id: str, protocol: str, session_timeout_ms: int, client_id: str
) -> dict[str, Any]:
    """librdkafka settings of the membership consumer (KIP-848 forbids client-side session/assignor keys):
    a follower's fetch wait, as it never reads a bucket from its beginning (see the module doc)."""
    conf = {
        **base,
        "logger": logging.getLogger("librdkafka.consumer"),
        "group.id": group_id,
        "client.id": client_id,
        "group.protocol": protocol,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": FOLLOW_FETCH_WAIT_MS,
    }
    if protocol == "classic":
        conf["partition.assignment.strategy"] = "cooperative-sticky"
        conf["session.timeout.ms"] = session_timeout_ms
        conf["heartbeat.interval.ms"] = max(100, session_timeout_ms // 4)
    return conf


def loader_config(settings: KafkaSettings, *, client_id: str) -> dict[str, Any]:
    """librdkafka settings of the loader: a stateless reader of buckets assigned by hand (a group id it never
    joins; an event at each partition's end, for a bucket whose last records compaction removed), at
    librdkafka's default fetch wait."""
    return reader_config(
        settings,
        f"{client_id}-loader-{uuid.uuid4().hex}",
        **{"client.id": f"{client_id}-loader", "logger": logging.getLogger("librdkafka.consumer")},
    )


def _discard(_snap: Snapshot) -> None:
    """Where snapshots go before :meth:`Membership.start`, or when it is given nowhere to send them."""


class RebalanceFailed(Exception):
    """A rebalance callback failed: librdkafka's assignment and the bucket table may now disagree."""


class Membership(BackgroundConsumer[Consumer]):
    """The consumer-group member of one ingester; a thread polls and publishes snapshots. A failure
    (:class:`RebalanceFailed`, or any other) stops the member, kept in ``failure``, and with it the worker."""

    def __init__(
        self,
        conf: dict[str, Any],
        topic: str,
        *,
        loader_conf: dict[str, Any],
        handoff_timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
        consumer_factory: Callable[[dict[str, Any]], Consumer] = Consumer,
    ) -> None:
        """``conf``: the group member's settings (:func:`consumer_config`); ``loader_conf``: the loader's
        (:func:`loader_config`); ``consumer_factory`` makes both, the member first."""
        super().__init__("membership", "membership consumer")
        self._conf = conf
        self._loader_conf = loader_conf
        self._loader: Consumer | None = None
        self._ends: dict[int, int] = {}
        """Bucket still loading -> the end offset it had at assignment (the loader reads up to it)."""
        self._held: dict[int, list[tuple[str, bool]]] = {}
        """Bucket still loading -> what the member read of it from that end on, applied once it is loaded."""
        self._consumer_factory = consumer_factory
        self._topic = topic
        self._publish: Callable[[Snapshot], None] = _discard
        self._clock = clock
        self._lock = threading.Lock()
        self._table = BucketTable(handoff_timeout_s=handoff_timeout_s)
        self._published = -1
        """The version of the last snapshot published."""
        self._consumer: Consumer | None = None
        self.stats = MembershipStats()
        self._callback_failure: RebalanceFailed | None = None
        self.member_id: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self, publish: Callable[[Snapshot], None] = _discard) -> None:
        """Join the group; every changed :class:`Snapshot` goes to ``publish``, called on the poll thread."""
        self._publish = publish
        self._consumer = self._consumer_factory(self._conf)
        self._loader = self._consumer_factory(self._loader_conf)
        self._consumer.subscribe(
            [self._topic],
            on_assign=self._guard("on_assign", self._on_assign),
            on_revoke=self._guard("on_revoke", self._on_revoke),
            on_lost=self._guard("on_lost", self._on_lost),
        )
        super().start()

    def close(self, timeout: float = 30.0) -> None:
        """Leave the group (blocking): the poll thread closes the consumer and ends."""
        self.stop()
        self.join(timeout)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._table.snapshot()

    def confirm(self, channels: set[str]) -> None:
        """Channels another worker of the group confirmed (any thread); published at the next poll."""
        with self._lock:
            self._table.confirm(channels)

    def take_handed_off(self) -> set[str]:
        with self._lock:
            return self._table.take_handed_off()

    def handoff_state(self) -> tuple[int, int]:
        """(channels kept for a hand-off now, channels parted unconfirmed so far)."""
        with self._lock:
            return self._table.overlap_channels, self._table.timed_out

    # -- the poll thread ---------------------------------------------------------------------------
    def _open(self) -> Consumer:
        consumer = self._consumer
        assert consumer is not None  # made and subscribed by start()
        return consumer

    def _poll(self, consumer: Consumer) -> None:
        messages = consumer.consume(_POLL_BATCH, _LOADING_POLL_S if self._ends else _POLL_TIMEOUT_S)
        if self._callback_failure is not None:
            raise self._callback_failure
        self.member_id = consumer.memberid()
        loaded = self._loader.consume(_POLL_BATCH, _LOADING_POLL_S) if self._ends and self._loader else []
        with self._lock:
            for msg in loaded:
                self._load(msg)
            for msg in messages:
                self._record(msg)
            self._table.expire(self._clock())
            changed = self._table.version != self._published
            snap = self._table.snapshot() if changed else None
        if snap is not None:
            self._published = snap.version
            self._publish(snap)

    def _failed(self, exc: Exception) -> None:
        if not isinstance(exc, RebalanceFailed):  # that one the worker logs in one line (and exits 1)
            log.exception("membership consumer failed")

    def _record(self, msg: Any) -> None:
        """A record the member read (from a bucket's end at assignment on): applied, or held while the
        bucket loads."""
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                self._consumer_error(err)
            return
        key = msg.key()
        if key is None:
            return
        change = (key.decode("utf-8", "replace"), msg.value() is not None)
        held = self._held.get(msg.partition())
        if held is not None:
            held.append(change)
        else:
            self._table.apply(msg.partition(), *change)

    def _load(self, msg: Any) -> None:
        """A record (or a partition's end) the loader read of a bucket still loading."""
        bucket = msg.partition()
        end = self._ends.get(bucket)
        if end is None:
            return  # revoked while it loaded, or loaded already
        offset = msg.offset() or 0
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                self._consumer_error(err)
            elif offset >= end:
                self._loaded(bucket)  # the end is a gap compaction left
            return
        key = msg.key()
        if offset < end and key is not None:
            self._table.apply(bucket, key.decode("utf-8", "replace"), msg.value() is not None)
        if offset + 1 >= end:
            self._loaded(bucket)

    def _loaded(self, bucket: int) -> None:
        """The loader read ``bucket`` to its end: what the member read of it since counts, and so does it."""
        del self._ends[bucket]
        for login, present in self._held.pop(bucket, []):
            self._table.apply(bucket, login, present)
        self._table.loaded(bucket)
        if self._loader is not None:
            self._loader.incremental_unassign([TopicPartition(self._topic, bucket)])

    def _forget(self, buckets: list[int]) -> None:
        """Buckets the member no longer owns: the loader stops reading those still loading."""
        loading = [b for b in buckets if self._ends.pop(b, None) is not None]
        for b in buckets:
            self._held.pop(b, None)
        if loading and self._loader is not None:
            self._loader.incremental_unassign([TopicPartition(self._topic, b) for b in loading])

    def _consumer_error(self, err: KafkaError) -> None:
        self.stats.consumer_errors += 1
        log.warning("channel topic consumer: %s", err)

    def _close(self, consumer: Consumer) -> None:
        super()._close(consumer)
        if self._loader is not None:
            super()._close(self._loader)

    # -- rebalance callbacks (called by librdkafka inside consume(), on the poll thread) -----------
    def _guard(self, name: str, fn: Callable[[Consumer, list[TopicPartition]], None]) -> Callable[..., None]:
        def callback(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            try:
                fn(consumer, partitions)
            except Exception as exc:
                # librdkafka would go on with its own idea of the assignment (confluent-kafka assigns
                # by itself when the callback did not), leaving buckets owned and silently unlogged:
                # stop the member instead (after consume() returns), and with it the worker.
                self.stats.callback_errors += 1
                buckets = [p.partition for p in partitions]
                log.debug("rebalance callback %s failed for %s", name, buckets, exc_info=True)
                reason = one_line(exc)
                self._callback_failure = RebalanceFailed(
                    f"rebalance callback {name} failed for buckets {buckets}: {type(exc).__name__}: {reason}"
                )

        return callback

    def _rebalanced(self, partitions: list[TopicPartition], change: Callable[[list[int]], None]) -> list[int]:
        """``change`` the table by the buckets of ``partitions`` (under the lock), counted as a rebalance;
        the buckets."""
        buckets = [p.partition for p in partitions]
        with self._lock:
            change(buckets)
        self.stats.rebalances += 1
        return buckets

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Stateless: a bucket's channels are learnt from its beginning, by the loader up to the end offset
        it has now; the member follows it from there."""
        ends: dict[int, int] = {}
        loader = self._loader
        assert loader is not None  # made by start()
        for p in partitions:
            # asked over the loader's connection: a broker answers a connection's requests in order, so
            # the member's would wait for its fetch
            low, high = loader.get_watermark_offsets(p, timeout=_ENDS_TIMEOUT_S)
            p.offset = high
            if high > low:
                ends[p.partition] = high
        consumer.incremental_assign(partitions)
        if not partitions:
            return

        def assign(buckets: list[int]) -> None:
            self._table.assign(buckets)
            self._forget(buckets)  # a stale load of an earlier assignment
            self._ends.update(ends)
            self._held.update({b: [] for b in ends})
            for b in buckets:
                if b not in ends:
                    self._table.loaded(b)  # nothing to read

        buckets = self._rebalanced(partitions, assign)
        if ends:
            loader.incremental_assign(
                [TopicPartition(self._topic, b, OFFSET_BEGINNING) for b in sorted(ends)]
            )
        self.stats.assigned += len(buckets)
        log.info("assigned buckets %s", buckets)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return

        def revoke(buckets: list[int]) -> None:
            self._forget(buckets)
            self._table.revoke(buckets, self._clock())

        buckets = self._rebalanced(partitions, revoke)
        self.stats.revoked += len(buckets)
        if self.stopping:
            log.info("released buckets %s (leaving the group)", buckets)
        else:
            log.info("revoked buckets %s (kept until the new owner confirms each channel)", buckets)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return

        def lose(buckets: list[int]) -> None:
            self._forget(buckets)
            self._table.lose(buckets)

        buckets = self._rebalanced(partitions, lose)
        self.stats.lost += len(buckets)
        log.warning("lost buckets %s (session expired): stopped logging them", buckets)


class GroupAssignments:
    """Asks the group coordinator what it means to give one member: an ingester that owns no bucket is
    ready only when the group has none for it. The admin client is made at the first question."""

    def __init__(self, conf: dict[str, Any], group_id: str) -> None:
        self._conf = conf
        self._group = group_id
        self._admin: AdminClient | None = None

    def nothing_for(self, member_id: str) -> bool:
        """Whether the group's target assignment of ``member_id`` is empty (False: not a member now)."""
        if self._admin is None:
            self._admin = AdminClient(self._conf)
        group = self._group
        desc: Any = self._admin.describe_consumer_groups([group], request_timeout=5)[group].result()
        for m in desc.members:
            if m.member_id == member_id:
                target = getattr(m, "target_assignment", None) or m.assignment
                return not target.topic_partitions
        return False
