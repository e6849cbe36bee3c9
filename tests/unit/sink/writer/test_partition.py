"""One partition's write (sink/writer/partition.py) with its collaborators passed in: a storage double that
keeps what it is given and frames it with the real store.blocks (tests/unit/sink/writer/partition_doubles.py),
and a dead-letter double. Invalid records are dead letters with their reason and Kafka position; opted-out
events are dropped and counted; copies are dropped (within the partition, and against the ids the last
batches wrote, a copy before it is decoded); what Cassandra rejects dead-letters every record of the rejected
block; the ids taken come back to the driver."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consent.rule import OptOutSet
from core.irc_parse import parse_line
from core.testing import twitch_line
from schemas.chat_event import ChatEvent, encode
from sink.dedup import ID_BYTES, id_of, id_set
from sink.settings import SinkSettings
from sink.writer.partition import InputCut, write_partition
from sink.writer.stats import WriteStats
from store.keys import message_id_bytes
from tests.unit.sink.writer.partition_doubles import REJECTION, DeadLettersDouble, StorageDouble, wired

SETTINGS = SinkSettings(cassandra_ttl_s=86_400, topic_messages="chat.messages")  # type: ignore[call-arg]
T0 = 1_700_000_000_000
Record = tuple[bytes | None, int, int]


def _event(n: int, **fields: Any) -> ChatEvent:
    """A Twitch chat message (its id a uuid, as Twitch's are), parsed from its line."""
    args: dict[str, Any] = {
        "sent_at": T0 + n, "login": "alice", "text": f"hi {n}", "user_id": "42", "room_id": "7",
        "message_id": f"00000000-0000-4000-8000-{n:012d}",
    }  # fmt: skip
    args.update(fields)
    kind = args.pop("kind", "PRIVMSG")
    event = parse_line(twitch_line(kind, "chan", **args), received_at=args["sent_at"] + 5, ingester="r1")
    assert event is not None
    return event


def _records(events: list[ChatEvent], partition: int = 0) -> list[Record]:
    return [(encode(e), partition, offset) for offset, e in enumerate(events)]


# -- records that are no events: dead letters ------------------------------------------------------------


def test_valid_events_are_taken_with_their_records_and_invalid_records_are_dead_letters() -> None:
    storage, letters = StorageDouble(), DeadLettersDouble()
    missing = json.dumps({"message_id": "m", "kind": "PRIVMSG"}).encode()
    records: list[Record] = [
        (encode(_event(1)), 0, 10),
        (b"not json", 0, 11),
        (None, 2, 12),
        (encode(_event(2, kind="CLEARCHAT", login=None, text="alice")), 1, 13),
        (missing, 3, 14),
    ]

    stats = write_partition(records, SETTINGS, wired(storage, letters))

    assert storage.ids() == [
        _event(1).message_id,
        _event(2, kind="CLEARCHAT", login=None, text="x").message_id,
    ]
    assert [t.origin for t in storage.taken] == [records[0], records[3]]  # the record each event came from
    assert [t.mid for t in storage.taken] == [message_id_bytes(t.event.message_id) for t in storage.taken]
    assert (stats.events, stats.deadletters, stats.duplicates, stats.optout_dropped) == (2, 3, 0, 0)
    assert stats.rows == {"channel_blocks": 1, "user_blocks": 1} and stats.requests == 2
    assert [(value, source) for value, _reason, source in letters.sent] == [
        (b"not json", "chat.messages/0/11"),
        (None, "chat.messages/2/12"),
        (missing, "chat.messages/3/14"),
    ]
    reasons = [reason for _value, reason, _source in letters.sent]
    assert reasons[0].startswith("not JSON") and reasons[1] == "empty record (no value)"
    assert "sent_at" in reasons[2] or "channel" in reasons[2]  # a missing field, named
    assert letters.flushes == 1 and storage.finished == 1


def test_without_a_dead_letter_sink_invalid_records_are_only_counted() -> None:
    storage = StorageDouble()
    stats = write_partition([(b"{}", 0, 1)], SETTINGS, wired(storage, None))
    assert (stats.events, stats.deadletters, storage.taken) == (0, 1, [])
    assert storage.finished == 1  # the (empty) task is finished all the same


def test_nothing_to_dead_letter_is_not_flushed() -> None:
    storage, letters = StorageDouble(), DeadLettersDouble()
    write_partition(_records([_event(1)]), SETTINGS, wired(storage, letters))
    assert letters.sent == [] and letters.flushes == 0


def test_a_value_the_storage_refuses_is_a_dead_letter_of_that_record_only() -> None:
    events = [_event(1), _event(2), _event(3)]
    storage, letters = StorageDouble(refuse=frozenset({events[1].message_id})), DeadLettersDouble()
    stats = write_partition(_records(events), SETTINGS, wired(storage, letters))
    assert storage.ids() == [events[0].message_id, events[2].message_id]
    ((value, reason, source),) = letters.sent
    assert (value, source) == (encode(events[1]), "chat.messages/0/1")
    assert reason == "cannot be written to Cassandra: ValueError: a key part is longer than 64 KiB"
    assert (stats.events, stats.deadletters) == (2, 1)


def test_a_rejected_write_dead_letters_every_record_of_its_block() -> None:
    same_hour = [_event(1), _event(2), _event(3, user_id="43", login="bob")]
    later = _event(3_600_000, user_id="44", login="carol")  # the next hour's channel block, carol's month
    storage = StorageDouble(reject=frozenset({same_hour[1].message_id}))
    letters = DeadLettersDouble()
    records = _records([*same_hour, later])

    stats = write_partition(records, SETTINGS, wired(storage, letters))

    # the channel's block of that hour holds all three; alice's month block (the user copy) two of them
    assert len(storage.rejected) == 2 and {b.table for b in storage.rejected} == {"channel", "user"}
    assert sorted(source for _v, _r, source in letters.sent) == [f"chat.messages/0/{i}" for i in range(3)]
    assert {value for value, _r, _s in letters.sent} == {r[0] for r in records[:3]}  # each record once
    assert all(
        reason == f"Cassandra rejected it: InvalidRequest: {REJECTION}" for _v, reason, _s in letters.sent
    )
    assert (stats.events, stats.deadletters) == (1, 3)  # only the next hour's line is written
    assert letters.flushes == 1


def test_a_write_that_fails_fails_the_partition() -> None:
    storage = StorageDouble(down=True)
    with pytest.raises(RuntimeError, match="Cassandra is down"):
        write_partition(_records([_event(1)]), SETTINGS, wired(storage, DeadLettersDouble()))


# -- opt-outs ---------------------------------------------------------------------------------------------


def test_the_events_of_opted_out_users_and_channels_are_dropped_and_counted() -> None:
    events = [
        _event(1, user_id="42", login="bob"),
        _event(2, user_id="43", login="carol"),
        _event(3, kind="CLEARCHAT", login=None, user_id="42", text="bob"),  # bob's ban: his too
        _event(4, user_id="43", login="carol", room_id="600"),  # carol, in an opted-out channel
    ]
    storage = StorageDouble()
    optouts = OptOutSet(users=frozenset({"42"}), channels=frozenset({"600"}))
    stats = write_partition(_records(events), SETTINGS, wired(storage), optouts=optouts)
    assert storage.ids() == [events[1].message_id]
    assert (stats.events, stats.optout_dropped, stats.deadletters) == (1, 3, 0)
    assert stats.optout_logins == {"bob": "42"}  # not carol's: her line was dropped for its channel


# -- copies -----------------------------------------------------------------------------------------------


def test_copies_in_the_partition_and_of_the_recent_ids_are_dropped() -> None:
    storage = StorageDouble()
    earlier = id_of(_event(1).message_id)  # written by an earlier batch of the window
    records = [(encode(_event(n)), 0, i) for i, n in enumerate((1, 2, 3, 2, 4, 3, 2))]

    stats = write_partition(records, SETTINGS, wired(storage), recent=earlier)

    assert storage.ids() == [_event(n).message_id for n in (2, 3, 4)]
    assert [t.origin for t in storage.taken] == [records[1], records[2], records[4]]  # the first copy of each
    assert (stats.events, stats.duplicates) == (3, 4)
    assert id_set(stats.written_ids) == {id_of(_event(n).message_id) for n in (2, 3, 4)}
    assert len(stats.written_ids) == 3 * ID_BYTES
    assert stats.written_ids == b"".join(id_of(_event(n).message_id) for n in (2, 3, 4))  # in order taken


def test_a_copy_is_dropped_before_it_is_decoded() -> None:
    """A record whose id (read from the head of its value) was written or taken is dropped whatever follows
    it: a damaged copy is a duplicate, not a dead letter."""
    storage, letters = StorageDouble(), DeadLettersDouble()
    first, written = _event(1), _event(2)
    records: list[Record] = [
        (encode(first), 0, 0),
        (encode(first)[:60], 0, 1),  # a copy of the first, cut short after its id: never decoded
        (encode(written)[:-2] + b"!!", 0, 2),  # a copy of what an earlier batch wrote, damaged
    ]
    stats = write_partition(records, SETTINGS, wired(storage, letters), recent=id_of(written.message_id))
    assert storage.ids() == [first.message_id]
    assert (stats.events, stats.duplicates, stats.deadletters, letters.sent) == (1, 2, 0, [])
    alone, its_letters = StorageDouble(), DeadLettersDouble()  # the damaged record alone: decoded, refused
    write_partition(records[1:2], SETTINGS, wired(alone, its_letters), recent=b"")
    assert alone.taken == [] and [source for _v, _r, source in its_letters.sent] == ["chat.messages/0/1"]


def test_a_copy_in_another_field_order_is_decoded_and_then_dropped() -> None:
    storage = StorageDouble()
    event = _event(1)
    other_order = json.dumps(dict(reversed(json.loads(encode(event)).items()))).encode()  # another producer
    records: list[Record] = [(encode(event), 0, 0), (other_order, 0, 1), (other_order, 0, 2)]
    stats = write_partition(records, SETTINGS, wired(storage), recent=b"")
    assert storage.ids() == [event.message_id] and (stats.events, stats.duplicates) == (1, 2)
    alone = StorageDouble()
    write_partition([(other_order, 0, 0), (encode(event), 0, 1)], SETTINGS, wired(alone), recent=b"")
    assert alone.ids() == [event.message_id]  # the peeked copy matches the id taken from the decoded one


def test_an_id_of_an_event_the_storage_refused_is_not_handed_back_as_written() -> None:
    events = [_event(1), _event(2)]
    storage = StorageDouble(refuse=frozenset({events[0].message_id}))
    stats = write_partition(_records([*events, events[0]]), SETTINGS, wired(storage), recent=b"")
    assert stats.written_ids == id_of(events[1].message_id)
    assert (stats.events, stats.deadletters, stats.duplicates) == (1, 1, 1)  # its copy: not sent again


def test_without_recent_ids_every_copy_is_taken_and_no_id_is_kept() -> None:
    storage = StorageDouble()
    records = [(encode(_event(1)), 0, 0), (encode(_event(1)), 0, 1)]
    stats = write_partition(records, SETTINGS, wired(storage))  # a backfill: Spark deduplicated it
    assert len(storage.taken) == 2 and [b.lines for b in storage.blocks] == [1, 1]  # the block keeps one
    assert (stats.events, stats.duplicates, stats.written_ids) == (2, 0, b"")


def test_a_hashed_id_is_dropped_as_a_copy_by_its_uuid() -> None:
    plain = parse_line(":bob!b@h PRIVMSG #chan :no twitch id", received_at=T0)
    assert plain is not None and len(plain.message_id) != 36  # the hash of the line
    storage = StorageDouble()
    stats = write_partition(_records([plain, plain]), SETTINGS, wired(storage), recent=b"")
    assert [t.mid for t in storage.taken] == [message_id_bytes(plain.message_id)]
    assert stats.written_ids == id_of(plain.message_id) == message_id_bytes(plain.message_id)
    assert stats.duplicates == 1


def test_written_ids_travel_with_the_stats_and_add_up() -> None:
    one, two = (
        WriteStats(duplicates=1, written_ids=id_of("a")),
        WriteStats(duplicates=2, written_ids=id_of("b")),
    )
    one.add(WriteStats.from_dict(two.to_dict()))
    assert (one.duplicates, id_set(one.written_ids)) == (3, {id_of("a"), id_of("b")})


# -- an input Spark cut short --------------------------------------------------------------------------------


def test_an_input_cut_short_is_not_written_and_fails_the_task() -> None:
    storage = StorageDouble()
    asked: list[int] = []

    def cut() -> bool:
        asked.append(len(storage.taken))  # asked once every record is taken
        return True

    with pytest.raises(InputCut, match="after 2 events"):
        write_partition(
            _records([_event(1), _event(2)]), SETTINGS, wired(storage, DeadLettersDouble()), cut=cut
        )
    assert asked == [2]
    assert (storage.finished, storage.blocks) == (0, [])


def test_a_whole_input_is_written_after_the_check() -> None:
    storage = StorageDouble()
    stats = write_partition(
        _records([_event(1), _event(2)]), SETTINGS, wired(storage, DeadLettersDouble()), cut=lambda: False
    )
    assert (stats.events, storage.finished) == (2, 1)
    assert sum(block.lines for block in storage.blocks) == 4  # each line: its channel's day, its user's month
