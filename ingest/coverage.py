"""Per-channel coverage events of one ingester, and the confirmations of the others.

:class:`CoverageTracker` (pure) turns the IRC pool's confirmed set into ``joined`` / ``left`` events
(``schemas.coverage``), with the reason a channel stopped being covered. :class:`ConfirmationWatch`
reads ``chatlog.coverage`` from its end, in a thread (:mod:`core.background_consumer`), and reports every
channel that *another* worker of the same replica group has confirmed since (the hand-off waits for exactly
that before parting), and every one such a worker has left.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any, Final

from confluent_kafka import Consumer, TopicPartition

from core import kafka_offsets
from core.background_consumer import BackgroundConsumer
from core.compacted import follower_options
from schemas.coverage import ALIVE, JOINED, LEFT, CoverageEvent, decode_records

log = logging.getLogger(__name__)

_POLL_BATCH: Final = 5000
_POLL_TIMEOUT_S: Final = 1.0  # a record ends the wait at once; this bounds only a quiet loop and stop()


class CoverageTracker:
    """What this worker covers, as the events that changed it."""

    def __init__(self, replica: int, worker: str, session: int) -> None:
        self.replica = replica
        self.worker = worker
        self.session = session
        self.covered: set[str] = set()
        self._handing_off: dict[str, bool] = {}
        """Channels a confirmation released, still covered: are they unwanted yet (the pool's wanted set
        lags the release by a poll or more)? Their LEFT event says ``handed-off``."""

    def _event(self, channel: str, state: str, at: int, reason: str = "") -> CoverageEvent:
        return CoverageEvent(
            replica=self.replica,
            worker=self.worker,
            session=self.session,
            state=state,  # type: ignore[arg-type]
            at=at,
            channel=channel,
            reason=reason,
        )

    def update(
        self,
        confirmed: AbstractSet[str],
        wanted: AbstractSet[str],
        now_ms: int,
        handed_off: AbstractSet[str] = frozenset(),
    ) -> list[CoverageEvent]:
        """Events for the channels confirmed since the last call and those no longer confirmed.

        A channel that left while still wanted was lost (connection closed, kicked); one that is not
        wanted any more was parted, or handed off when the new owner's confirmation released it (in this
        call or an earlier one: the release may be reported before the pool has parted the channel)."""
        self._track_releases(handed_off, wanted)
        if confirmed == self.covered:
            return []
        out = [self._event(ch, JOINED, now_ms) for ch in sorted(confirmed - self.covered)]
        for ch in sorted(self.covered - confirmed):
            reason = "lost" if ch in wanted else "handed-off" if ch in self._handing_off else "parted"
            out.append(self._event(ch, LEFT, now_ms, reason))
        self.covered = set(confirmed)
        for ch in [ch for ch in self._handing_off if ch not in self.covered]:
            del self._handing_off[ch]
        return out

    def _track_releases(self, handed_off: AbstractSet[str], wanted: AbstractSet[str]) -> None:
        for ch in handed_off:
            self._handing_off[ch] = False
        for ch, unwanted in list(self._handing_off.items()):
            if ch not in wanted:
                self._handing_off[ch] = True
            elif unwanted:  # wanted again after the release took effect (its bucket came back)
                del self._handing_off[ch]

    def refresh(self, now_ms: int) -> list[CoverageEvent]:
        """Every covered channel announced again, so a ledger reader needs look back only this far."""
        return [self._event(ch, JOINED, now_ms, "refresh") for ch in sorted(self.covered)]

    def stop_all(self, now_ms: int, reason: str) -> list[CoverageEvent]:
        """Everything stops being covered (the worker is shutting down)."""
        out = [self._event(ch, LEFT, now_ms, reason) for ch in sorted(self.covered)]
        self.covered = set()
        self._handing_off = {}
        return out

    def alive(self, now_ms: int) -> CoverageEvent:
        return self._event("", ALIVE, now_ms)


def confirmations(events: Iterable[CoverageEvent], *, replica: int, worker: str) -> tuple[set[str], set[str]]:
    """(confirmed, withdrawn): channels other workers of ``replica`` joined or left, in these events."""
    joined: set[str] = set()
    left: set[str] = set()
    for ev in events:
        if ev.replica != replica or ev.worker == worker or ev.state == ALIVE:
            continue
        if ev.state == JOINED:
            joined.add(ev.channel)
            left.discard(ev.channel)
        else:
            left.add(ev.channel)
            joined.discard(ev.channel)
    return joined, left


class ConfirmationWatch(BackgroundConsumer[Consumer]):
    """Tails the coverage topic from its end and calls ``on_confirmed`` with the channels other workers
    of this replica group have confirmed and those they have left (a thread; no consumer group, nothing
    committed). A failure ends the watch, kept in ``failure``: the worker stops on it."""

    def __init__(
        self,
        conf: dict[str, Any],
        topic: str,
        *,
        replica: int,
        worker: str,
        on_confirmed: Callable[[set[str], set[str]], None],
    ) -> None:
        super().__init__("coverage-watch", "coverage watch consumer")
        self._conf = {
            **conf,
            "group.id": f"chatlog-coverage-watch-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **follower_options("chatlog-coverage-watch"),
        }
        self._topic = topic
        self._replica = replica
        self._worker = worker
        self._on_confirmed = on_confirmed
        self._ready = threading.Event()
        self.undecodable = 0

    def start(self, timeout: float = 15.0) -> None:
        """Start tailing; returns once the consumer is positioned at the end (so nothing is missed)."""
        super().start()
        self._ready.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        self.stop()
        self.join(timeout)

    def _open(self) -> Consumer:
        consumer = Consumer(self._conf)
        try:
            meta = consumer.list_topics(self._topic, timeout=15).topics[self._topic]
            # the end offsets now: nothing produced after start is missed
            ends = kafka_offsets.ends(consumer, self._topic, sorted(meta.partitions), timeout=15)
            consumer.assign([TopicPartition(self._topic, p, end) for p, end in ends.items()])
        except Exception:
            consumer.close()
            raise
        self._ready.set()
        return consumer

    def _poll(self, consumer: Consumer) -> None:
        events, bad = decode_records(consumer.consume(_POLL_BATCH, _POLL_TIMEOUT_S))
        self.undecodable += bad
        joined, left = confirmations(events, replica=self._replica, worker=self._worker)
        if joined or left:
            self._on_confirmed(joined, left)

    def _failed(self, exc: Exception) -> None:
        log.error("coverage watch on %s failed: %s", self._topic, exc)

    def _ended(self) -> None:
        self._ready.set()  # start() returns when the watch failed before it was positioned, too
