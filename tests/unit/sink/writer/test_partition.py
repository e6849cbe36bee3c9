"""One partition's write with its collaborators passed in (test doubles for Cassandra and the dead-letter
sink); index rows are rewritten at most once per refresh period, and outlive the rows they point to; a
name (user id and login, channel id and login) is written at most once per hour of event time."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from schemas.cql import month_period, user_period
from sink.writer.caches import IndexCache, NameCache, SpillGuard
from sink.writer.cassandra import Reject

from schemas.chat_event import ChatEvent, decode, encode
from sink.dedup import ID_BYTES, id_of, id_set
from sink.settings import SinkSettings
from sink.writer.collaborators import Collaborators
from sink.writer.partition import write_partition
from sink.writer.stats import WriteStats
from tests.unit.sink.writer.partition_doubles import CassandraDouble, DeadLettersDouble, NameBound


def test_a_written_key_is_fresh_until_the_refresh_period_ends() -> None:
    cache = IndexCache(refresh_s=300)
    assert not cache.fresh("k", now=1000.0)
    cache.add(["k"], when=1000.0)
    assert cache.fresh("k", now=1000.0)
    assert cache.fresh("k", now=1299.0)
    assert not cache.fresh("k", now=1300.0)
    assert not cache.fresh("other", now=1000.0)


def test_index_rows_live_one_refresh_period_longer_than_data_rows() -> None:
    cache = IndexCache(refresh_s=300)
    assert cache.ttl(86_400) == 86_700
    assert cache.ttl(0) == 0  # no expiry stays no expiry


def test_the_cache_is_bounded() -> None:
    cache = IndexCache(refresh_s=300, max_entries=10)
    cache.add(range(11), when=0.0)
    cache.add(["new"], when=0.0)
    assert cache.fresh("new", now=1.0)
    assert not cache.fresh(3, now=1.0)


# -- write_partition with its collaborators passed in (no Cassandra, no Kafka) ----------------------------


def _event(n: int, **fields: Any) -> ChatEvent:
    base: dict[str, Any] = {
        "message_id": f"m{n}", "kind": "PRIVMSG", "channel": "chan", "user_login": "alice", "text": "hi",
        "sent_at": 1_700_000_000_000 + n, "received_at": 1_700_000_000_100 + n, "raw": f"line {n}",
    }  # fmt: skip
    base.update(fields)
    return ChatEvent(**base)


SETTINGS = SinkSettings(cassandra_ttl_s=86_400, topic_messages="chat.messages")  # type: ignore[call-arg]


def test_valid_events_become_rows_and_invalid_records_dead_letters_with_their_position() -> None:
    cassandra, letters = CassandraDouble(), DeadLettersDouble()
    records: list[tuple[bytes | None, int, int]] = [
        (encode(_event(1)), 0, 10),
        (b"not json", 0, 11),
        (None, 2, 12),
        (encode(_event(2, user_login=None, kind="NOTICE")), 1, 13),
    ]

    stats = write_partition(records, SETTINGS, Collaborators(cassandra, letters), index_cache=IndexCache())

    assert (stats.events, stats.deadletters, stats.requests) == (2, 2, len(cassandra.sent))
    assert cassandra.tables_written() == Counter(
        # one bucket of one channel; alice has no user id: her login key's month is indexed
        {"chat_by_channel": 2, "chat_by_user": 1, "chat_buckets": 1, "user_login_keys": 1}
    )
    assert stats.rows == cassandra.tables_written()
    indexes = ("chat_buckets", "user_login_keys")
    data_ttl = {i.statement.ttl for i in cassandra.sent if i.partition[0] not in indexes}
    assert data_ttl == {(86_400).to_bytes(4, "big")}
    assert [(v, s) for v, _, s in letters.sent] == [
        (b"not json", "chat.messages/0/11"),
        (None, "chat.messages/2/12"),
    ]
    assert letters.sent[1][1] == "empty record (no value)"
    assert letters.flushes == 1


def test_without_a_dead_letter_sink_invalid_records_are_only_counted() -> None:
    cassandra = CassandraDouble()
    stats = write_partition(
        [(b"{}", 0, 1)], SETTINGS, Collaborators(cassandra, None), index_cache=IndexCache()
    )
    assert (stats.events, stats.deadletters, cassandra.sent) == (0, 1, [])
    assert cassandra.finished == 1


def test_a_record_cassandra_rejects_becomes_a_dead_letter_and_not_an_event() -> None:
    cassandra, letters = CassandraDouble(invalid=frozenset({"m2"})), DeadLettersDouble()
    records = [(encode(_event(n)), 0, n) for n in (1, 2, 3)]

    stats = write_partition(records, SETTINGS, Collaborators(cassandra, letters), index_cache=IndexCache())

    assert (stats.events, stats.deadletters) == (2, 1)
    assert stats.rows["chat_by_channel"] == 2 and stats.rows["chat_by_user"] == 2
    ((value, reason, source),) = letters.sent
    assert value == records[1][0] and source == "chat.messages/0/2"
    assert reason.startswith("Cassandra rejected it: ValueError: Key length")


def test_a_fresh_index_row_is_not_written_again() -> None:
    cache = IndexCache(refresh_s=300)
    first, second = CassandraDouble(), CassandraDouble()
    write_partition([(encode(_event(1)), 0, 1)], SETTINGS, Collaborators(first, None), index_cache=cache)
    write_partition([(encode(_event(2)), 0, 2)], SETTINGS, Collaborators(second, None), index_cache=cache)
    assert first.tables_written()["chat_buckets"] == 1
    assert second.tables_written()["chat_buckets"] == 0


# -- a user's month partition and its spill ------------------------------------------------------------------


def _user_rows(cassandra: CassandraDouble) -> list[tuple[Any, ...]]:
    """(user key, period) of each user row sent, and the spilled flags as ("spilled", key cells)."""
    out: list[tuple[Any, ...]] = []
    for item in cassandra.sent:
        statement = item.statement
        if statement.table == "chat_by_user.spilled":
            out.append(("spilled", *statement.cells))
        elif statement.table == "chat_by_user":
            row = dict(zip(statement.columns, statement.cells, strict=True))
            out.append((row["user_key"], row["period"]))
    return out


def test_a_user_month_goes_into_half_days_past_the_cap_and_its_month_is_flagged_once() -> None:
    settings = SETTINGS.model_copy(update={"sink_user_month_rows": 3})
    guard = SpillGuard()
    at = 1_700_000_000_000  # 2023-11-14 22:13 UTC
    month, half = month_period(at), user_period(at)
    alice = [_event(n, sent_at=at + n) for n in range(5)]
    bob = _event(9, user_login="bob", sent_at=at + 9)
    first = CassandraDouble()
    records = [(encode(e), 0, i) for i, e in enumerate([*alice[:4], bob, alice[4]])]
    stats = write_partition(records, settings, Collaborators(first, None), spill_guard=guard)
    assert _user_rows(first) == [
        *[("login:alice", month)] * 3,
        ("spilled", "login:chan", "login:alice", month),
        ("login:alice", half),
        ("login:bob", month),
        ("login:alice", half),
    ]
    assert stats.rows["chat_by_user"] == 7  # the flag is a row written too
    # the next task of the process: the month is known to be flagged, the user goes on in half days
    second = CassandraDouble()
    write_partition(
        [(encode(_event(7, sent_at=at + 7)), 0, 7)], settings, Collaborators(second, None), spill_guard=guard
    )
    assert _user_rows(second) == [("login:alice", half)]
    # a new process (a new guard) starts counting again: the month partition takes up to the cap anew
    third = CassandraDouble()
    write_partition(
        [(encode(_event(8, sent_at=at + 8)), 0, 8)],
        settings,
        Collaborators(third, None),
        spill_guard=SpillGuard(),
    )
    assert _user_rows(third) == [("login:alice", month)]


def test_a_flag_is_remembered_only_once_its_task_wrote_it() -> None:
    settings = SETTINGS.model_copy(update={"sink_user_month_rows": 1})
    guard = SpillGuard()
    records = [(encode(_event(n)), 0, n) for n in range(2)]
    with pytest.raises(RuntimeError, match="down"):
        write_partition(records, settings, Collaborators(FailingCassandra(), None), spill_guard=guard)
    assert guard.spilled == set()
    again = CassandraDouble()
    write_partition(records, settings, Collaborators(again, None), spill_guard=guard)
    assert [r[0] for r in _user_rows(again)].count("spilled") == 1


class FailingCassandra(CassandraDouble):
    """A Cassandra whose writes all fail (the task raises)."""

    def finish(self, reject: Reject) -> tuple[int, int]:
        raise RuntimeError("Cassandra is down")


# -- the index of login user keys (user_login_keys) ---------------------------------------------------------


def _login_keys(cassandra: CassandraDouble) -> list[tuple[Any, ...]]:
    """(channel key, period, user key, TTL) of each ``user_login_keys`` row sent."""
    out: list[tuple[Any, ...]] = []
    for item in cassandra.sent:
        statement = item.statement
        if statement.table == "user_login_keys":
            row = dict(zip(statement.columns, statement.cells, strict=True))
            out.append((row["channel_key"], row["period"], row["user_key"], statement.ttl))
    return out


def test_a_login_keyed_user_row_indexes_its_channel_month_once_per_process_with_its_user_row() -> None:
    settings = SETTINGS.model_copy(update={"sink_user_month_rows": 2})
    cache = IndexCache(refresh_s=300)
    at = 1_700_000_000_000
    month = month_period(at)
    events = [
        *[_event(n, sent_at=at + n) for n in range(4)],  # alice: login only; past the cap, half days
        _event(5, user_login="bob", user_id="42", sent_at=at + 5),  # an id: no index row
        _event(6, user_login="carol", sent_at=at + 6),
    ]
    first = CassandraDouble()
    write_partition(
        [(encode(e), 0, i) for i, e in enumerate(events)],
        settings,
        Collaborators(first, None),
        index_cache=cache,
        spill_guard=SpillGuard(),
    )
    ttl = (86_400 + 300).to_bytes(4, "big")  # outlives the rows it points to (IndexCache.ttl)
    assert _login_keys(first) == [
        ("login:chan", month, "login:alice", ttl),  # the month, also for the rows put into half days
        ("login:chan", month, "login:carol", ttl),
    ]
    # queued with the event's user row (the same chunk, the same flight): never after it
    origins = {item.statement.table: item.origin for item in first.sent[:4]}
    assert origins["user_login_keys"] is origins["chat_by_user"]
    second = CassandraDouble()  # the next task of the process: already written
    write_partition(
        [(encode(_event(7, sent_at=at + 7)), 0, 7)], settings, Collaborators(second, None), index_cache=cache
    )
    assert _login_keys(second) == []
    next_month = CassandraDouble()
    later = at + 31 * 86_400_000
    write_partition(
        [(encode(_event(8, sent_at=later)), 0, 8)],
        settings,
        Collaborators(next_month, None),
        index_cache=cache,
    )
    assert _login_keys(next_month) == [("login:chan", month_period(later), "login:alice", ttl)]


def test_an_index_row_is_remembered_only_once_its_task_wrote_it() -> None:
    cache = IndexCache()
    records = [(encode(_event(1)), 0, 1)]
    with pytest.raises(RuntimeError, match="down"):
        write_partition(records, SETTINGS, Collaborators(FailingCassandra(), None), index_cache=cache)
    again = CassandraDouble()
    write_partition(records, SETTINGS, Collaborators(again, None), index_cache=cache)
    assert [key[2] for key in _login_keys(again)] == ["login:alice"]


# -- the name history ---------------------------------------------------------------------------------------

HOUR = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % HOUR  # the start of an hour


def _named(n: int, at: int, **fields: Any) -> ChatEvent:
    base: dict[str, Any] = {
        "user_id": "42", "display_name": "Alice", "channel_id": "7", "sent_at": at, "received_at": at,
    }  # fmt: skip
    base.update(fields)
    return _event(n, **base)


def _write(events: list[ChatEvent], cache: NameCache, settings: SinkSettings = SETTINGS) -> CassandraDouble:
    cassandra = CassandraDouble()
    records = [(encode(e), 0, i) for i, e in enumerate(events)]
    write_partition(
        records, settings, Collaborators(cassandra, None), index_cache=IndexCache(), name_cache=cache
    )
    return cassandra


def _names(cassandra: CassandraDouble) -> list[tuple[str, str, tuple[str, ...], int]]:
    return [
        (b.table, b.column, b.key, b.sent_at)
        for b in (i.statement for i in cassandra.sent)
        if isinstance(b, NameBound)
    ]


def test_a_name_is_written_once_per_hour_as_a_first_and_a_last_seen_of_both_directions() -> None:
    cache = NameCache()
    first = _write([_named(1, T0 + 10), _named(2, T0 + 20), _named(3, T0 + HOUR - 1)], cache)
    assert sorted(_names(first)) == sorted(
        (table, column, key, T0 + 10)
        for table, key in (
            ("user_names", ("42", "alice", "Alice")),
            ("user_ids_by_login", ("alice", "42")),
            ("channel_names", ("7", "chan")),
            ("channel_ids_by_login", ("chan", "7")),
        )
        for column in ("first_seen", "last_seen")
    )
    assert first.tables_written()["user_names"] == 2  # counted per statement
    later_same_hour = _write([_named(4, T0 + 1000)], cache)
    assert _names(later_same_hour) == []
    next_hour = _write([_named(5, T0 + HOUR + 5)], cache)
    assert {(t, k) for t, _c, k, _at in _names(next_hour)} == {
        ("user_names", ("42", "alice", "Alice")),
        ("user_ids_by_login", ("alice", "42")),
        ("channel_names", ("7", "chan")),
        ("channel_ids_by_login", ("chan", "7")),
    }
    assert {at for *_, at in _names(next_hour)} == {T0 + HOUR + 5}


def test_an_hour_between_hours_already_written_writes_nothing_but_one_outside_does() -> None:
    cache = NameCache()
    _write([_named(1, T0 + 5), _named(2, T0 + 3 * HOUR + 5)], cache)
    assert _names(_write([_named(3, T0 + HOUR + 5), _named(4, T0 + 2 * HOUR)], cache)) == []  # a replay
    earlier = _names(_write([_named(5, T0 - 10)], cache))
    assert {at for *_, at in earlier} == {T0 - 10}  # it may be the first sighting
    assert _names(_write([_named(6, T0 - HOUR + 1)], cache)) == []  # the same hour as T0 - 10


def test_a_new_login_display_name_or_channel_login_is_written_in_the_same_hour() -> None:
    cache = NameCache()
    _write([_named(1, T0 + 5)], cache)
    renamed = _write([_named(2, T0 + 6, user_login="bob", display_name="Bob", channel="newchan")], cache)
    assert {(t, k) for t, _c, k, _at in _names(renamed)} == {
        ("user_names", ("42", "bob", "Bob")),
        ("user_ids_by_login", ("bob", "42")),
        ("channel_names", ("7", "newchan")),
        ("channel_ids_by_login", ("newchan", "7")),
    }
    recased = _write([_named(3, T0 + 7, display_name="ALICE")], cache)
    assert {(t, k) for t, _c, k, _at in _names(recased)} == {
        ("user_names", ("42", "alice", "ALICE")),
        ("user_ids_by_login", ("alice", "42")),
    }


def test_events_without_ids_write_no_name() -> None:
    cassandra = _write(
        [
            _event(1),  # plain IRC: neither id
            _event(2, user_id="42", user_login=None, kind="NOTICE"),  # an id without a login
        ],
        NameCache(),
    )
    assert _names(cassandra) == []
    assert cassandra.tables_written()["chat_by_channel"] == 2


def test_a_channel_id_alone_writes_only_the_channel_and_no_display_name_is_an_empty_one() -> None:
    channel_only = _write([_event(1, channel_id="7")], NameCache())
    assert {t for t, *_ in _names(channel_only)} == {"channel_names", "channel_ids_by_login"}
    no_display = _write([_named(2, T0, display_name=None, channel_id=None)], NameCache())
    assert ("user_names", "first_seen", ("42", "alice", ""), T0) in _names(no_display)
    too_long = _write([_named(3, T0, display_name="x" * 201, channel_id=None)], NameCache())
    assert ("user_names", "last_seen", ("42", "alice", ""), T0) in _names(too_long)


def test_names_are_marked_written_only_once_the_partition_is_written() -> None:
    class _Failing(CassandraDouble):
        def finish(self, reject: Reject) -> tuple[int, int]:
            raise RuntimeError("Cassandra is down")

    cache = NameCache()
    records = [(encode(_named(1, T0)), 0, 1)]
    with pytest.raises(RuntimeError, match="down"):
        write_partition(
            records, SETTINGS, Collaborators(_Failing(), None), index_cache=IndexCache(), name_cache=cache
        )
    assert cache.get(("ks", ("42", "alice", "Alice"))) is None
    assert len(_names(_write([_named(1, T0)], cache))) == 8  # the retried batch writes them


def test_name_rows_outlive_the_data_by_an_hour_and_the_cache_is_bounded() -> None:
    ttls = {b.ttl for b in (i.statement for i in _write([_named(1, T0)], NameCache()).sent)}
    assert ttls == {t.to_bytes(4, "big") for t in (86_400, 86_400 + 300, 86_400 + 3600)}  # data, index, names
    assert NameCache.ttl(0) == 0
    cache = NameCache(max_entries=2)
    cache.add({"a": (1, 1), "b": (1, 1), "c": (1, 1)})
    cache.add({"d": (1, 1)})
    assert cache.get("a") is None and cache.get("d") == (1, 1)
    cache.add({"d": (3, 3)})
    assert cache.get("d") == (1, 3)  # spans merge: written for hour 1 and for hour 3


# -- the writer's deduplication (sink_dedup=writer) ---------------------------------------------------------


def _written_ids(cassandra: CassandraDouble) -> list[str]:
    return [
        decode(bytes(i.origin[0])).message_id for i in cassandra.sent if i.partition[0] == "chat_by_channel"
    ]


def test_the_writer_drops_copies_in_its_records_and_of_the_recent_ids() -> None:
    cassandra = CassandraDouble()
    earlier = id_of("m1")  # written by an earlier batch of the window
    records = [(encode(_event(n)), 0, i) for i, n in enumerate((1, 2, 3, 2, 4, 3, 2))]

    stats = write_partition(
        records, SETTINGS, Collaborators(cassandra, None), index_cache=IndexCache(), recent=earlier
    )

    assert _written_ids(cassandra) == ["m2", "m3", "m4"]
    assert (stats.events, stats.duplicates) == (3, 4)
    assert id_set(stats.written_ids) == {id_of("m2"), id_of("m3"), id_of("m4")}
    assert len(stats.written_ids) == 3 * ID_BYTES


def test_without_recent_ids_every_copy_is_written_and_no_id_is_kept() -> None:
    cassandra = CassandraDouble()
    records = [(encode(_event(1)), 0, 0), (encode(_event(1)), 0, 1)]
    stats = write_partition(records, SETTINGS, Collaborators(cassandra, None), index_cache=IndexCache())
    assert (stats.events, stats.duplicates, stats.written_ids) == (2, 0, b"")


def test_written_ids_travel_with_the_stats_and_add_up() -> None:
    one, two = (
        WriteStats(duplicates=1, written_ids=id_of("a")),
        WriteStats(duplicates=2, written_ids=id_of("b")),
    )
    one.add(WriteStats.from_dict(two.to_dict()))
    assert (one.duplicates, id_set(one.written_ids)) == (3, {id_of("a"), id_of("b")})


def test_a_blob_of_ids_must_hold_whole_ids() -> None:
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        id_set(b"\x00" * 17)
