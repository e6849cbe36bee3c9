"""The writer's task: one partition of a micro-batch (or of a backfill) into Cassandra and the dead letters.

:func:`write_partition` runs in a Spark Python worker (or any process: a benchmark's raw writer). Per
record: :func:`_decoded` (the contract's validation, else a dead letter with the reason and the record's
Kafka position), :func:`_opted_out` (the events of opted-out users and channels are never written),
:func:`_is_copy` (a copy of a message already written: the other replica group's, a hand-off overlap),
then the storage takes the event (:class:`store.write.TaskWrite`: its blocks, index rows and name
history). Once every record is taken the storage writes them; what Cassandra rejects as invalid (never
retried) becomes dead letters too, every record whose line was in the rejected block. Nothing is
acknowledged before every write succeeded or was dead-lettered, so a failure fails the batch, and the batch
is re-run (its blocks are the same rows again). An input that Spark cut short (its executor failed while
feeding the task: pyspark ends the input quietly, :func:`sink.spark_private.input_cut`) is not written at all:
the task fails and Spark runs it again, whose blocks, cut from the whole input, would not be the same rows as
blocks of a part of it (the same messages stored twice). Only the chunks of :data:`CHUNK_EVENTS` written
before the end are written as they go; a re-run writes the same chunks again, the same rows.

Copies: every copy of a message is keyed by its channel, so all copies are in one Kafka partition, and one
task reads each partition of a micro-batch whole: a copy is either in the same task as the first, or in a
later batch. So a task drops an event whose id it has seen, or that the batches of the last
``sink_dedup_window`` wrote (the driver's :class:`sink.dedup.RecentIds`, handed to each task as one blob of
16-byte ids). A copy later than that is read once anyway (a reader drops a line it read already) and
``chatlog pack`` keeps one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from core.errors import one_line
from schemas.chat_event import InvalidEvent, decode, peek_message_id
from sink.dedup import id_set
from sink.writer.stats import WriteStats
from store.keys import message_id_bytes

CHUNK_EVENTS = 20_000
"""Events a task takes before it writes them (its memory stays bounded whatever a batch holds; each chunk's
blocks are blocks of their own)."""

if TYPE_CHECKING:
    from consent.rule import OptOutSet
    from schemas.chat_event import ChatEvent
    from sink.settings import SinkSettings
    from sink.writer.collaborators import Collaborators
    from store.requests import Item


class InputCut(RuntimeError):
    """The task's input ended before Spark's end of data: nothing of its last chunk was written."""


def write_partition(
    records: Iterable[Any],
    settings: SinkSettings,
    collaborators: Collaborators | None = None,
    *,
    optouts: OptOutSet | None = None,
    recent: bytes | None = None,
    cut: Callable[[], bool] | None = None,
) -> WriteStats:
    """Write ``records`` (value, Kafka partition, offset); return what was done, raise if it could not.

    ``optouts``: the events of these opted-out users and channels are counted in ``optout_dropped``, not
    written. ``recent``: the ids the last batches wrote; an event whose id is there or earlier in
    ``records`` is counted in ``duplicates``, not written; the ids written come back in ``written_ids``.
    None: every event is written (a backfill, deduplicated by Spark). ``cut``: asked once every record is
    taken, whether the input was cut short (then :class:`InputCut` is raised and the rest is not written).
    """
    from sink.writer.collaborators import production

    wiring = collaborators if collaborators is not None else production(settings)
    task = wiring.storage()
    taken = 0
    stats = WriteStats()
    seen = id_set(recent) if recent is not None else None
    written_ids = bytearray()
    letters = wiring.dead_letters
    topic = settings.topic_messages
    rejected: dict[int, tuple[Any, str]] = {}

    def reject(items: Iterable[Item], exc: BaseException) -> None:
        reason = f"Cassandra rejected it: {one_line(exc, 300, typed=True)}"
        for item in items:
            for origin in item.origins:
                rejected.setdefault(id(origin), (origin, reason))

    def dead_letter(record: Any, reason: str) -> None:
        value, partition, offset = record
        stats.deadletters += 1
        if letters is not None:
            source = f"{topic}/{partition}/{offset}" if partition is not None else "unknown"
            letters.send(None if value is None else bytes(value), reason, source)

    for record in records:
        if seen is not None and _seen_copy(record[0], seen):  # a copy: dropped before it is decoded
            stats.duplicates += 1
            continue
        event = decoded(record, dead_letter)
        if event is None or opted_out(event, optouts, stats):
            continue
        mid = _id(event.message_id)
        dedup_id = mid
        if seen is not None and dedup_id is not None:
            if dedup_id in seen:
                stats.duplicates += 1
                continue
            seen.add(dedup_id)
        try:
            task.add(event, record, mid)
        except ValueError as exc:  # an id or key Cassandra cannot hold: this record only
            dead_letter(record, f"cannot be written to Cassandra: {one_line(exc, 300, typed=True)}")
            continue
        stats.events += 1
        if seen is not None and dedup_id is not None:
            written_ids += dedup_id
        taken += 1
        if taken % CHUNK_EVENTS == 0:  # a big batch (a catch-up, a backfill) is written as it goes
            task.finish(reject)
    if cut is not None and cut():
        raise InputCut(
            f"the input of this task ended early, after {taken} events (Spark failed to read the rest and "
            "runs the task again): its last chunk is not written"
        )
    written = task.finish(reject)
    stats.rows.update(written.rows)
    stats.requests, stats.retries = written.requests, written.retries
    for record, reason in rejected.values():
        stats.events -= 1
        dead_letter(record, reason)
    if (stats.deadletters or rejected) and letters is not None:
        letters.flush()
    stats.written_ids = bytes(written_ids)
    return stats


def decoded(record: Any, dead_letter: Any) -> ChatEvent | None:
    """The record's chat event, validated by the contract's decoder; None (and a dead letter) otherwise."""
    value = record[0]
    try:
        if value is None:
            raise InvalidEvent("empty record (no value)")
        return decode(bytes(value))
    except InvalidEvent as exc:
        dead_letter(record, str(exc))
        return None


def opted_out(event: ChatEvent, optouts: OptOutSet | None, stats: WriteStats) -> bool:
    """Whether the event is one of an opt-out's (counted, with the login its user sent it as)."""
    if optouts is None or not optouts.drops(event):
        return False
    stats.optout_dropped += 1
    if event.user_login is not None and event.user_id in optouts.users:
        stats.optout_logins[event.user_login] = event.user_id
    return True


def _id(message_id: str) -> bytes | None:
    try:
        return message_id_bytes(message_id)
    except ValueError:  # an id with no uuid (a lone surrogate): the storage dead-letters the event
        return None


def _seen_copy(value: Any, seen: set[bytes]) -> bool:
    """Whether a record's message id (peeked, not decoded: :func:`schemas.chat_event.peek_message_id`) is one
    already written or taken: a copy."""
    if value is None:
        return False
    peeked = peek_message_id(bytes(value))
    if peeked is None:
        return False
    mid = _id(peeked)
    return mid is not None and mid in seen


def partition_task(
    settings: SinkSettings, dead_letters: bool, optouts: OptOutSet | None = None, recent: bytes | None = None
) -> Any:
    """The function Spark runs on each partition of framed records (:mod:`sink.framing`): the writer's one
    entry point, where the production collaborators are wired. ``optouts``: the driver's opt-outs at the
    start of the batch; ``recent``: the ids the last batches wrote; both shipped with the task."""

    def task(records: Iterator[bytes]) -> Iterator[dict[str, Any]]:
        from sink.framing import unframe
        from sink.spark_private import input_cut
        from sink.writer.collaborators import production
        from sink.writer.worker_setup import prepare
        from store.write import PROCESS_CACHES

        prepare()
        if optouts is not None:  # an erasure deletes index rows: a change of the opt-outs forgets them
            PROCESS_CACHES.consent_is((optouts.users, optouts.channels))
        wiring = production(settings, dead_letters=dead_letters)
        cut = input_cut(records)
        yield write_partition(
            map(unframe, records), settings, wiring, optouts=optouts, recent=recent, cut=cut
        ).to_dict()

    return task


def warm_up_task(settings: SinkSettings) -> Any:
    """A Spark task that only sets up the Python worker it runs in as :func:`partition_task` does (its
    patches, imports, the Cassandra session with its prepared statements, the dead-letter producer) and
    yields 1: the workers Spark keeps are then ready for the first micro-batch (:mod:`sink.job.warm_up`)."""

    def task(_items: Iterator[Any]) -> Iterator[int]:
        from sink.writer.collaborators import production
        from sink.writer.worker_setup import prepare

        prepare()
        production(settings, dead_letters=True).storage()
        yield 1

    return task
