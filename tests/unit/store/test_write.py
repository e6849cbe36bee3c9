"""store/write.py without Cassandra: what one task writes (its blocks, the index rows that find them, the name
history) and what a process remembers of it (index rows once per refresh period, a name once per hour of
event time, part 0 of a period until a writer has put PART_BYTES into it), only once the writes succeeded;
every cell bound as cassandra-driver itself serializes the live schema's column type.

The session is a double of the driver's (tests/unit/store/session_doubles.py) whose prepared statements are
the driver's own PreparedStatement, typed from store/cassandra.cql (tests/unit/store/live_schema.py)."""

from __future__ import annotations

import re
import uuid
from collections import Counter
from typing import Any

import msgspec
import pytest
from cassandra import InvalidRequest, cqltypes
from cassandra.protocol import ColumnMetadata
from cassandra.query import BoundStatement, PreparedStatement

from core.testing import chat_events, twitch_event
from core.testing_cassandra import Call
from core.times import epoch_ms as _ms
from schemas.chat_event import ChatEvent
from store import frame
from store.blocks import CHANNEL
from store.keys import channel_part, day_of, month_of, user_part
from store.requests import BatchLimits, CassandraWriteError, Item
from store.write import (
    HOUR_MS,
    MAX_DISPLAY_NAME_CHARS,
    Caches,
    IndexCache,
    NameCache,
    PartGuard,
    TaskWrite,
    WorkerSession,
    WriteOptions,
    channel_name,
    user_name,
)
from tests.unit.store.live_schema import tables
from tests.unit.store.session_doubles import PreparingSession

TYPES = {
    "text": cqltypes.UTF8Type,
    "int": cqltypes.Int32Type,
    "bigint": cqltypes.LongType,
    "timestamp": cqltypes.DateType,
    "uuid": cqltypes.UUIDType,
    "blob": cqltypes.BytesType,
}
_INSERT = re.compile(r"INSERT INTO (\w+)\.(\w+) \(([^)]*)\) VALUES \([^)]*\)(?: USING (.*))?$")
_ADD = re.compile(r"UPDATE (\w+)\.(\w+) USING TTL \? SET (\w+) = \3 \+ \? WHERE (.*)$")
"""An element added to a set column (a user's month's parts in its part 0)."""
LIVE = tables()


class Session(PreparingSession):
    """A driver session double whose prepared inserts are the driver's PreparedStatement of the live schema's
    column types (and ``USING TIMESTAMP ?`` a bigint, ``USING TTL ?`` an int), routed by the table's
    partition key; ``fail`` as :class:`core.testing_cassandra.FakeSession`'s."""

    def prepare(self, query: str) -> Any:
        super().prepare(query)
        added = _ADD.match(query)
        if added is not None:
            keyspace, table, column, where = added.groups()
            return _set_add(keyspace, table, column, where, query)
        match = _INSERT.match(query)
        assert match is not None, query
        keyspace, table, names, using = match.groups()
        live = LIVE[table]
        columns = [c.strip() for c in names.split(",")]
        meta = [ColumnMetadata(keyspace, table, c, TYPES[live.columns[c]]) for c in columns]
        for option in re.findall(r"(TIMESTAMP|TTL) \?", using or ""):
            meta.append(
                ColumnMetadata(
                    keyspace,
                    table,
                    f"[{option.lower()}]",
                    TYPES["bigint" if option == "TIMESTAMP" else "int"],
                )
            )
        routing = [columns.index(c) for c in live.partition]
        return PreparedStatement(meta, query.encode(), routing, query, keyspace, 4, None, None)

    def sent(self) -> list[BoundStatement]:
        """The statements sent and not failed, each once (the last sending)."""
        out = {id(c.statement): c.statement for c in self.executed if self.fail(c) is None}
        return list(out.values())


def _set_add(keyspace: str, table: str, column: str, where: str, query: str) -> PreparedStatement:
    """The prepared statement of ``UPDATE ... USING TTL ? SET column = column + ? WHERE k = ? AND ...``."""
    live = LIVE[table]
    keys = re.findall(r"(\w+) = \?", where)
    assert live.columns[column] == "set<int> static" and keys == list(live.partition), query
    meta = [
        ColumnMetadata(keyspace, table, "[ttl]", TYPES["int"]),
        ColumnMetadata(keyspace, table, column, cqltypes.SetType.apply_parameters([TYPES["int"]])),
        *(ColumnMetadata(keyspace, table, k, TYPES[live.columns[k]]) for k in keys),
    ]
    return PreparedStatement(
        meta, query.encode(), [2 + i for i in range(len(keys))], query, keyspace, 4, None, None
    )


def _values(bound: BoundStatement) -> dict[str, Any]:
    """The bound cells of ``bound``, deserialized by its columns' types, and checked to be the bytes the
    driver's own ``bind`` serializes of those values."""
    meta = bound.prepared_statement.column_metadata
    values = [m.type.deserialize(cell, 4) for m, cell in zip(meta, bound.values, strict=True)]
    assert bound.prepared_statement.bind(values).values == bound.values  # the driver's serialization
    assert bound.routing_key == bound.prepared_statement.bind(values).routing_key
    return {m.name: v for m, v in zip(meta, values, strict=True)}


def _table(bound: BoundStatement) -> str:
    return str(bound.prepared_statement.column_metadata[0].table_name)


def _rows(session: Session) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for bound in session.sent():
        out.setdefault(_table(bound), []).append(_values(bound))
    return out


OPTIONS = WriteOptions(keyspace="ks", ttl_s=86_400, limits=BatchLimits(max_rows=1), retry_s=0.05)


def _task(
    session: Session, caches: Caches, options: WriteOptions = OPTIONS, now: float = 1000.0
) -> TaskWrite:
    return TaskWrite(WorkerSession.of(session), options, caches, clock=lambda: now)


T0 = 1_700_000_000_000 - 1_700_000_000_000 % HOUR_MS  # an hour's start


def _named(n: int, at: int, **line: Any) -> ChatEvent:
    args: dict[str, Any] = {
        "login": "alice", "user_id": "42", "room_id": "7", "display_name": "Alice", "text": f"hi {n}",
        "message_id": str(uuid.UUID(int=n, version=4)),
    }  # fmt: skip
    args.update(line)
    return twitch_event("PRIVMSG", "chan", sent_at=at, **args)


# -- one task's rows ----------------------------------------------------------------------------------------


def test_a_tasks_blocks_index_rows_and_names_with_their_ttls_and_times() -> None:
    session, caches = Session(), Caches()
    task = _task(session, caches)
    events = [
        _named(1, T0 + 10),
        _named(2, T0 + 20),
        _named(3, T0 + 30, login="bob", user_id="43", display_name=None),
    ]
    for i, event in enumerate(events):
        task.add(event, origin=("record", 0, i))
    written = task.finish()
    rows = _rows(session)
    assert written.events == 3 and written.rows == {t: len(r) for t, r in rows.items()}
    assert written.requests == len(session.sent())
    # the blocks: one of the channel's day, one per user's month, each line framed as it went in
    (channel,) = rows["channel_blocks"]
    assert (channel["channel_key"], channel["day"], channel["part"], channel["lines"]) == (
        "7",
        day_of(T0),
        0,
        3,
    )
    assert (_ms(channel["first_at"]), _ms(channel["last_at"])) == (T0 + 10, T0 + 30)
    assert frame.decode(channel["frame"]).sents == [T0 + 10, T0 + 20, T0 + 30]
    users = sorted((r["user_key"], r["month"], r["part"], r["lines"]) for r in rows["user_blocks"])
    assert users == [("42", month_of(T0), 0, 2), ("43", month_of(T0), 0, 1)]
    assert {r["[ttl]"] for r in rows["channel_blocks"] + rows["user_blocks"]} == {86_400}
    # the index rows that find them, outliving them by the refresh period
    assert [(r["channel_key"], r["day"], r["part"]) for r in rows["channel_days"]] == [("7", day_of(T0), 0)]
    assert sorted((r["user_key"], r["month"]) for r in rows["user_months"]) == [
        ("42", month_of(T0)),
        ("43", month_of(T0)),
    ]
    assert sorted(r["user_key"] for r in rows["channel_users"]) == ["42", "43"]
    index_ttls = {r["[ttl]"] for t in ("channel_days", "user_months", "channel_users") for r in rows[t]}
    assert index_ttls == {86_400 + 300}
    # the names: each first seen and last seen, written at -(event time) and +(event time)
    alice = [r for r in rows["user_names"] if r["user_login"] == "alice"]  # a statement per cell
    assert [(_ms(r["first_seen"]), r["[timestamp]"]) for r in alice if "first_seen" in r] == [
        (T0 + 10, -(T0 + 10) * 1000)
    ]
    assert [(_ms(r["last_seen"]), r["[timestamp]"]) for r in alice if "last_seen" in r] == [
        (T0 + 20, (T0 + 20) * 1000)
    ]
    assert {(r["user_id"], r["display_name"]) for r in rows["user_names"]} == {("42", "Alice"), ("43", "bob")}
    assert {(r["user_login"], r["user_id"]) for r in rows["user_ids_by_login"]} == {
        ("alice", "42"),
        ("bob", "43"),
    }
    assert {(r["channel_id"], r["channel"]) for r in rows["channel_names"]} == {("7", "chan")}
    assert {(r["channel"], r["channel_id"]) for r in rows["channel_ids_by_login"]} == {("chan", "7")}
    assert {r["[ttl]"] for t in ("user_names", "channel_names") for r in rows[t]} == {86_400 + 3600}


def test_the_next_task_of_the_process_writes_what_it_did_not_write_lately() -> None:
    caches = Caches(index=IndexCache(refresh_s=300))
    first = Session()
    task = _task(first, caches, now=1000.0)
    task.add(_named(1, T0 + 10))
    task.finish()
    same_hour = Session()
    task = _task(same_hour, caches, now=1200.0)
    task.add(_named(2, T0 + HOUR_MS - 1))
    task.finish()
    assert Counter(_table(b) for b in same_hour.sent()) == {"channel_blocks": 1, "user_blocks": 1}
    later = Session()
    task = _task(later, caches, now=1300.0)  # the refresh period is over: the index rows again
    task.add(_named(3, T0 + HOUR_MS + 5))  # and the next hour: the names again
    task.finish()
    assert Counter(_table(b) for b in later.sent()) == {
        "channel_blocks": 1, "user_blocks": 1, "channel_days": 1, "user_months": 1, "channel_users": 1,
        "user_names": 2, "user_ids_by_login": 2, "channel_names": 2, "channel_ids_by_login": 2,
    }  # fmt: skip


def test_a_new_name_is_written_in_the_same_hour_and_a_replayed_hour_between_written_ones_is_not() -> None:
    caches = Caches()
    for events in ([_named(1, T0 + 5)], [_named(2, T0 + 3 * HOUR_MS + 5)]):
        task = _task(Session(), caches)
        for event in events:
            task.add(event)
        task.finish()
    replay, renamed = Session(), Session()
    task = _task(replay, caches)
    task.add(_named(3, T0 + HOUR_MS + 5))
    task.finish()
    assert not any(_table(b).endswith(("_names", "_by_login")) for b in replay.sent())
    task = _task(renamed, caches)
    task.add(_named(4, T0 + 6, login="alicia", display_name="Alicia"))
    task.finish()
    assert {_table(b) for b in renamed.sent() if "name" in _table(b) or "login" in _table(b)} == {
        "user_names",
        "user_ids_by_login",
    }


def test_what_failed_is_not_remembered_and_the_rerun_batch_writes_it() -> None:
    caches = Caches()
    down = Session(fail=lambda _call: RuntimeError("NoHostAvailable"))
    task = _task(down, caches)
    task.add(_named(1, T0 + 10))
    with pytest.raises(CassandraWriteError, match="still failing"):
        task.finish()
    again = Session()
    task = _task(again, caches)
    task.add(_named(1, T0 + 10))
    task.finish()
    assert {"channel_days", "user_months", "user_names"} <= {_table(b) for b in again.sent()}


def test_a_block_cassandra_rejects_goes_to_reject_with_the_origins_of_its_lines() -> None:
    def fail(call: Call) -> BaseException | None:
        bound = call.statement
        if isinstance(bound, BoundStatement) and _table(bound) == "channel_blocks":
            error: BaseException = InvalidRequest('Error from server: code=2200 [Invalid query] message="x"')
            return error
        return None

    session = Session(fail=fail)
    task = _task(session, Caches())
    for i in range(3):
        task.add(_named(i, T0 + i), origin=("record", 0, i))
    rejected: list[tuple[list[Item], BaseException]] = []
    task.finish(lambda items, exc: rejected.append((list(items), exc)))
    ((items, exc),) = rejected
    assert [origin for item in items for origin in item.origins] == [("record", 0, i) for i in range(3)]
    assert isinstance(exc, InvalidRequest)
    assert "user_blocks" in {_table(b) for b in session.sent()}  # the other writes went ahead


def test_a_period_whose_part_0_a_writer_filled_goes_on_in_its_parts() -> None:
    caches = Caches(parts=PartGuard(part_bytes=1))
    task = _task(Session(), caches)
    task.add(_named(1, T0 + 10))
    task.finish()  # part 0: now past this process's bound for the day and the month
    later = Session()
    task = _task(later, caches)
    at = T0 + HOUR_MS // 2 + 7  # the same day and month, another half hour
    task.add(_named(2, at))
    task.finish()
    rows = _rows(later)
    assert [r["part"] for r in rows["channel_blocks"]] == [channel_part(at)] != [0]
    blocks = [r for r in rows["user_blocks"] if "parts" not in r]
    assert [r["part"] for r in blocks] == [user_part(at)]
    # the part named in the month's part 0, with the index rows' time to live
    named = [r for r in rows["user_blocks"] if "parts" in r]
    assert [(r["month"], r["part"], r["parts"], r["[ttl]"]) for r in named] == [
        (blocks[0]["month"], 0, {user_part(at)}, rows["user_months"][0]["[ttl]"])
    ]
    assert [(r["day"], r["part"]) for r in rows["channel_days"]] == [(day_of(at), channel_part(at))]
    other = Session()  # another day: part 0 again
    task = _task(other, caches)
    task.add(_named(3, T0 + 2 * 86_400_000))
    task.finish()
    assert [r["part"] for r in _rows(other)["channel_blocks"]] == [0]


def test_a_key_cassandra_cannot_hold_is_refused_and_nothing_taken() -> None:
    task = _task(Session(), Caches())
    event = twitch_event("PRIVMSG", "c", sent_at=T0, login="bob", text="hi")  # no room id: keyed by its login
    huge = msgspec.structs.replace(event, channel="c" * 70_000)  # past the contract's bound: not from Kafka
    with pytest.raises(ValueError, match="64 KiB"):
        task.add(huge)
    assert task.blocks() == [] and task.written.events == 0


def test_blocks_framed_elsewhere_are_written_as_they_are_with_their_index_rows() -> None:
    from store.blocks import blocks_of, framed

    items = [framed(e) for e in chat_events(50, channels=1, now_ms=T0 + HOUR_MS // 2)]
    key = (items[0].channel_key, day_of(items[0].line[0]), 0)
    blocks = blocks_of(CHANNEL, key, items, level=frame.PACKED_LEVEL)
    session = Session()
    task = _task(session, Caches())
    task.add_blocks(blocks)
    task.finish()
    rows = _rows(session)
    assert [r["frame"] for r in rows["channel_blocks"]] == [b.frame for b in blocks]
    assert [r["block"] for r in rows["channel_blocks"]] == [b.block for b in blocks]
    assert [(r["channel_key"], r["day"], r["part"]) for r in rows["channel_days"]] == [key]


# -- the caches ------------------------------------------------------------------------------------------


def test_a_written_index_row_is_fresh_until_the_refresh_period_ends() -> None:
    cache = IndexCache(refresh_s=300)
    assert not cache.fresh("k", now=1000.0)
    cache.add(["k"], when=1000.0)
    assert cache.fresh("k", now=1000.0) and cache.fresh("k", now=1299.0)
    assert not cache.fresh("k", now=1300.0) and not cache.fresh("other", now=1000.0)
    assert cache.ttl(86_400) == 86_700 and cache.ttl(0) == 0  # no expiry stays no expiry


def test_the_index_cache_is_bounded() -> None:
    cache = IndexCache(refresh_s=300, max_entries=10)
    cache.add(range(11), when=0.0)
    cache.add(["new"], when=0.0)
    assert cache.fresh("new", now=1.0) and not cache.fresh(3, now=1.0)


def test_a_name_is_covered_between_the_hours_it_was_written_for() -> None:
    cache = NameCache(max_entries=2)
    cache.add({"d": (1, 1)})
    cache.add({"d": (3, 3)})
    assert [cache.covers("d", h) for h in range(5)] == [False, True, True, True, False]
    cache.add({"a": (1, 1), "b": (1, 1)})
    cache.add({"c": (1, 1)})  # past its bound: starts over
    assert not cache.covers("d", 2) and cache.covers("c", 1)
    assert NameCache.ttl(86_400) == 86_400 + 3600 and NameCache.ttl(0) == 0


def test_part_0_is_full_once_a_writer_put_its_bytes_in_it() -> None:
    guard = PartGuard(part_bytes=100, max_entries=2)
    guard.add("day", 60)
    assert not guard.full("day")
    guard.add("day", 40)
    assert guard.full("day") and not guard.full("other")
    guard.add("b", 1)
    guard.add("c", 1)  # past its bound: starts over
    assert not guard.full("day")


# -- the name of an event --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "user", "channel"),
    [
        (
            {"login": "bob", "user_id": "42", "room_id": "7", "display_name": "Bob"},
            ("42", "bob", "Bob"),
            ("7", "c"),
        ),
        ({"login": "bob", "user_id": "42", "display_name": None}, ("42", "bob", "bob"), None),
        ({"login": "bob", "display_name": "x" * (MAX_DISPLAY_NAME_CHARS + 1)}, None, None),  # no id
        (
            {"login": "bob", "user_id": "42", "display_name": "x" * (MAX_DISPLAY_NAME_CHARS + 1)},
            ("42", "bob", ""),
            None,
        ),
        (
            {"login": "bob", "user_id": "42", "display_name": "x" * MAX_DISPLAY_NAME_CHARS},
            ("42", "bob", "x" * MAX_DISPLAY_NAME_CHARS),
            None,
        ),
    ],
)
def test_the_names_an_event_writes(
    line: dict[str, Any], user: tuple[str, str, str] | None, channel: tuple[str, str] | None
) -> None:
    event = twitch_event("PRIVMSG", "c", sent_at=T0, text="hi", **line)
    assert (user_name(event), channel_name(event)) == (user, channel)


def test_a_ban_names_no_user_and_a_channel_id_alone_only_its_channel() -> None:
    ban = twitch_event("CLEARCHAT", "c", sent_at=T0, text="bob", user_id="42", room_id="7")
    assert (user_name(ban), channel_name(ban)) == (None, ("7", "c"))  # the target's login is not its sender's


def test_a_change_of_the_opt_outs_forgets_the_index_and_name_rows_written() -> None:
    from store.write import Caches

    caches = Caches()
    caches.consent_is((frozenset({"1"}), frozenset()))
    caches.index.add(["k"], 100.0)
    caches.names.add({"n": (5, 5)})
    caches.consent_is((frozenset({"1"}), frozenset()))  # the same opt-outs: kept
    assert caches.index.fresh("k", 101.0) and caches.names.covers("n", 5)
    caches.consent_is((frozenset(), frozenset()))  # one lifted (an erasure had deleted its rows)
    assert not caches.index.fresh("k", 101.0) and not caches.names.covers("n", 5)
