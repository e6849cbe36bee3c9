"""The sink's deduplication (sink/dedup.py): the ids the streaming sink's writers wrote lately, a window of
batch time handed to the next batches as one blob of 16-byte ids (the messages' uuids). Spark's own dedup
mode and the checkpoint's choice of mode were removed: the writers drop copies (tests of write_partition:
tests/unit/sink/writer/test_partition.py)."""

from __future__ import annotations

import uuid

import pytest

from core.settings import load
from sink.dedup import ID_BYTES, RecentIds, id_of, id_set
from sink.settings import SinkSettings
from store.keys import MESSAGE_ID_NAMESPACE


def test_an_id_is_the_16_bytes_of_the_messages_uuid() -> None:
    twitch = "b34ccfc7-4977-403a-8a94-33c6bac34fb8"
    assert id_of(twitch) == uuid.UUID(twitch).bytes and len(id_of(twitch)) == ID_BYTES
    assert id_of("hashed") == uuid.uuid5(MESSAGE_ID_NAMESPACE, "hashed").bytes


def test_a_blob_of_ids_is_its_ids_and_must_hold_whole_ids() -> None:
    assert id_set(id_of("a") + id_of("b") + id_of("a")) == {id_of("a"), id_of("b")}
    assert id_set(b"") == set()
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        id_set(b"\x00" * 17)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_next_batch_gets_the_ids_of_the_batches_within_the_window() -> None:
    clock = _Clock()
    recent = RecentIds(10_000, clock)
    recent.add(id_of("a"))
    clock.now += 6
    recent.add(id_of("b") + id_of("c"))
    clock.now += 5  # batch "a" ended 11 s ago: out of the 10-s window
    assert id_set(recent.blob()) == {id_of("b"), id_of("c")}
    assert len(recent) == 2


def test_the_latest_batch_is_kept_however_old() -> None:
    clock = _Clock()
    recent = RecentIds(1_000, clock)
    assert recent.blob() == b""
    recent.add(id_of("a"))
    recent.add(id_of("b"))
    clock.now += 3600  # an idle sink
    assert id_set(recent.blob()) == {id_of("b")}


@pytest.mark.parametrize(
    ("trigger", "window"), [("10 seconds", "30 seconds"), ("500 milliseconds", "10 seconds")]
)
def test_a_copy_the_window_after_its_first_finds_it_in_whatever_batch_reads_it(
    monkeypatch: pytest.MonkeyPatch, trigger: str, window: str
) -> None:
    """The first copy reaches Kafka as a batch starts and is written by it (a batch that ends at once); the
    second reaches it ``sink_dedup_window`` later, just after another batch started: the batch that reads it
    starts a trigger interval later still, and must be handed the first copy's id (a hung broker's
    producers fail over seconds apart: a cluster run stored 941 messages twice when the ids were kept for
    the window only, as long as the trigger)."""
    monkeypatch.setenv("CHATLOG_SINK_TRIGGER", trigger)
    monkeypatch.setenv("CHATLOG_SINK_DEDUP_WINDOW", window)
    settings = load(SinkSettings)
    clock = _Clock()
    recent = RecentIds(settings.dedup_retention_ms, clock)
    recent.add(id_of("first"))
    clock.now += 0.5 * settings.trigger_ms / 1000
    recent.add(id_of("between"))  # a batch between them: the first copy's is not the latest
    clock.now += (settings.dedup_window_ms + 0.5 * settings.trigger_ms - 1) / 1000
    assert id_of("first") in id_set(recent.blob())
    clock.now += 2 / 1000  # later than the window and a trigger: the first copy's batch has left
    assert id_of("first") not in id_set(recent.blob())
