"""Consumer-group membership: which buckets (channel-topic partitions) this ingester owns, and so
which channels it wants.

:class:`BucketTable` is the pure bookkeeping (an injected clock, no Kafka): buckets are assigned
(loading until their partition has been read up to the end it had at assignment), loaded, revoked into a
hand-off overlap (revoked, or lost when the session expired).
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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from core import kafka_offsets
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
_ENDS_TIMEOUT_S: Final = 60.0
"""How long a newly assigned bucket's end offset may take to read (a failure stops the member). A member
that rejoins after its broker hung asks while the leadership of the buckets moves: it asks again until the
new leader answers (:func:`core.kafka_offsets.offsets_at`), and meanwhile logs the buckets it lost."""
HELD_ELSEWHERE_S: Final = 120.0
"""How long another worker's confirmation of a channel releases it from a bucket revoked or lost later."""


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
class _Loading:
    """A bucket being read from its beginning: the end offset it had at assignment, and the changes that
    came from that end on before the read got there (applied after it, in order)."""

    end: int
    held: list[tuple[str, bool]] = field(default_factory=list)


@dataclass
class BucketTable:
    """Owned buckets with their channels, and revoked buckets kept until their new owner confirms."""

    handoff_timeout_s: float
    owned: dict[int, set[str]] = field(default_factory=dict)
    loading: dict[int, _Loading] = field(default_factory=dict)
    overlap: dict[int, _Overlap] = field(default_factory=dict)
    version: int = 0
    handed_off: set[str] = field(default_factory=set)
    """Channels released by a confirmation since the last :meth:`take_handed_off`."""
    timed_out: int = 0
    """Channels parted because the hand-off timeout passed without a confirmation (gap risk)."""
    elsewhere: OrderedDict[str, float] = field(default_factory=OrderedDict)
    """Channels other workers of the group confirmed in the last :data:`HELD_ELSEWHERE_S` and have not left,
    oldest confirmation first. A channel's entry goes when it becomes ours: a confirmation from before
    then does not say who has it now (its sender may be dead)."""

    def assign(self, ends: Mapping[int, int | None]) -> list[int]:
        """New buckets, each with the end offset it had at assignment (None: nothing to read, it counts at
        once); one with an end is read from its beginning (:meth:`load`) and counts once that end is
        reached. The buckets that were loading already (an earlier assignment's read, now stale)."""
        stale = [b for b in ends if b in self.loading]
        for b, end in ends.items():
            self.owned[b] = set()
            self.loading.pop(b, None)
            if end is None:
                self.overlap.pop(b, None)  # we own it again: the overlap copy is superseded
            else:
                self.loading[b] = _Loading(end)
        self.version += 1
        return stale

    def load(self, bucket: int, upto: int, change: tuple[str, bool] | None = None) -> bool:
        """What the read of a loading bucket reached: its offsets before ``upto`` are read, the last one
        bringing ``change`` (login, present; None for a record without a key or the partition's end). True
        when that is the bucket's end: it counts from now on."""
        loading = self.loading.get(bucket)
        if loading is None:
            return False  # revoked while it loaded, or loaded already
        if change is not None and upto <= loading.end:
            self._change(bucket, *change)
        if upto < loading.end:
            return False
        del self.loading[bucket]
        for login, present in loading.held:
            self._change(bucket, login, present)
        self.overlap.pop(bucket, None)  # we own it again: the overlap copy is superseded
        for login in self.owned[bucket]:  # ours now: a confirmation from before does not say who has it
            self.elsewhere.pop(login, None)
        self.version += 1
        return True

    def apply(self, bucket: int, login: str, present: bool) -> None:
        """A record of an owned bucket from its end at assignment on: a channel added (``present``) or
        removed (tombstone); held while the bucket loads."""
        loading = self.loading.get(bucket)
        if loading is not None:
            loading.held.append((login, present))
        elif self._change(bucket, login, present):
            self.version += 1

    def _change(self, bucket: int, login: str, present: bool) -> bool:
        """Whether the change altered the bucket's channels (a bucket not owned: no)."""
        channels = self.owned.get(bucket)
        if channels is None or (login in channels) == present:
            return False
        if present:
            channels.add(login)
            self.elsewhere.pop(login, None)
        else:
            channels.discard(login)
        return True

    def revoke(self, buckets: Iterable[int], now: float) -> list[int]:
        """Revoked (cooperatively) or lost (the session expired): keep logging the bucket's channels until
        the new owner confirms each (:meth:`confirm`), at most until ``now + handoff_timeout_s``. A lost
        bucket is kept too: the group may give it straight back (then nothing was missed while it was
        read again), and if another member has it, that member's JOINs may still be under way. Channels
        another worker confirmed in the last :data:`HELD_ELSEWHERE_S` are released at once (a member whose
        session expired can hear the new owner's JOIN before it hears of its loss). The buckets that were
        still loading (their reads stop; nothing of them was logged)."""
        stopped = []
        for b in buckets:
            channels = self.owned.pop(b, None)
            if self.loading.pop(b, None) is not None:
                stopped.append(b)
            elif channels and self.handoff_timeout_s > 0:
                self.overlap[b] = _Overlap(set(channels), now + self.handoff_timeout_s)
        self._forget_old(now)
        self._release(set(self.elsewhere))
        self.version += 1
        return stopped

    def confirm(self, channels: Iterable[str], now: float, withdrawn: Iterable[str] = ()) -> None:
        """Another worker of this replica group confirmed its JOIN of ``channels`` (and left
        ``withdrawn``): release them, and remember them a while for a bucket lost or revoked after."""
        wanted = set(channels)
        for ch in withdrawn:
            self.elsewhere.pop(ch, None)
        for ch in wanted:
            self.elsewhere[ch] = now
            self.elsewhere.move_to_end(ch)
        self._forget_old(now)
        self._release(wanted)

    def _forget_old(self, now: float) -> None:
        while self.elsewhere and now - next(iter(self.elsewhere.values())) > HELD_ELSEWHERE_S:
            self.elsewhere.popitem(last=False)

    def _release(self, wanted: set[str]) -> None:
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

    def confirm(self, channels: set[str], withdrawn: AbstractSet[str] = frozenset()) -> None:
        """Channels another worker of the group confirmed, and ones it left (any thread); published at the
        next poll."""
        with self._lock:
            self._table.confirm(channels, self._clock(), withdrawn)

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
        loading = bool(self._table.loading)  # read unlocked: only this thread changes it
        messages = consumer.consume(_POLL_BATCH, _LOADING_POLL_S if loading else _POLL_TIMEOUT_S)
        if self._callback_failure is not None:
            raise self._callback_failure
        self.member_id = consumer.memberid()
        loaded = self._loading_consumer().consume(_POLL_BATCH, _LOADING_POLL_S) if loading else []
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
        """A record the member read (from a bucket's end at assignment on)."""
        err = msg.error()
        if err is not None:
            self._consumer_error(err)
            return
        key = msg.key()
        if key is not None:
            self._table.apply(msg.partition(), key.decode("utf-8", "replace"), msg.value() is not None)

    def _load(self, msg: Any) -> None:
        """A record (or a partition's end, which may be past a last record compaction removed) the loader
        read of a bucket still loading."""
        offset = msg.offset() or 0
        err = msg.error()
        if err is None:
            key = msg.key()
            change = None if key is None else (key.decode("utf-8", "replace"), msg.value() is not None)
            done = self._table.load(msg.partition(), offset + 1, change)
        elif err.code() == KafkaError._PARTITION_EOF:
            done = self._table.load(msg.partition(), offset)
        else:
            self._consumer_error(err)
            done = False
        if done:
            self._stop_loading([msg.partition()])

    def _stop_loading(self, buckets: list[int]) -> None:
        """The loader reads these buckets no more (loaded, or no longer owned)."""
        if buckets:
            self._loading_consumer().incremental_unassign([TopicPartition(self._topic, b) for b in buckets])

    def _loading_consumer(self) -> Consumer:
        loader = self._loader
        assert loader is not None  # made by start()
        return loader

    def _consumer_error(self, err: KafkaError) -> None:
        self.stats.consumer_errors += 1
        log.warning("channel topic consumer: %s", err)

    def _close(self, consumer: Consumer) -> None:
        super()._close(consumer)
        super()._close(self._loading_consumer())

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

    def _rebalanced(
        self, partitions: list[TopicPartition], change: Callable[[list[int]], list[int]]
    ) -> list[int]:
        """``change`` the table by the buckets of ``partitions`` (under the lock), counted as a rebalance; the
        loader stops reading the buckets ``change`` says were loading. The buckets."""
        buckets = [p.partition for p in partitions]
        with self._lock:
            stopped = change(buckets)
        self._stop_loading(stopped)
        self.stats.rebalances += 1
        return buckets

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Stateless: a bucket's channels are learnt from its beginning, by the loader up to the end offset
        it has now; the member follows it from there."""
        loader = self._loading_consumer()
        # asked over the loader's connection: a broker answers a connection's requests in order, so the
        # member's would wait for its fetch
        bounds = kafka_offsets.bounds(loader, self._topic, [p.partition for p in partitions], _ENDS_TIMEOUT_S)
        for p in partitions:
            p.offset = bounds[p.partition][1]
        ends = {b: high if high > low else None for b, (low, high) in bounds.items()}
        consumer.incremental_assign(partitions)
        if not partitions:
            return
        buckets = self._rebalanced(partitions, lambda _b: self._table.assign(ends))
        reads = [
            TopicPartition(self._topic, b, OFFSET_BEGINNING)
            for b, end in sorted(ends.items())
            if end is not None
        ]
        if reads:
            loader.incremental_assign(reads)
        self.stats.assigned += len(buckets)
        log.info("assigned buckets %s", buckets)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        buckets = self._rebalanced(partitions, lambda b: self._table.revoke(b, self._clock()))
        self.stats.revoked += len(buckets)
        if self.stopping:
            log.info("released buckets %s (leaving the group)", buckets)
        else:
            log.info("revoked buckets %s (kept until the new owner confirms each channel)", buckets)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        buckets = self._rebalanced(partitions, lambda b: self._table.revoke(b, self._clock()))
        self.stats.lost += len(buckets)
        log.warning(
            "lost buckets %s (session expired): kept until their owner confirms each channel", buckets
        )


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
