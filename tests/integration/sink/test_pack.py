"""``chatlog pack`` (sink.pack) on the real Cassandra, over rows the sink's executor wrote: a packed month
reads exactly as its rows did (every store read: a month both ways, a part of it, counts, months, random
picks); a row written after the pack is read with the frame, once, and packed by the next run; a partition
written within the settle time, or spilled, is left as it is; running it again packs nothing."""

from __future__ import annotations

import asyncio
import calendar
from collections.abc import Iterator
from typing import Any

import pytest
from schemas.cql import month_period
from sink.pack import pack_months

from core.cql import connect
from core.errors import ChatlogError
from schemas.chat_event import ChatEvent
from serve.api.params import Format
from serve.api.stream import _encoder
from sink import pack as sink_pack
from sink.settings import SinkSettings
from store.protocol import ById
from store.read import CassandraStore
from tests.integration.serve.events import alice_and_bob, line_event, write
from tests.packed_frames import v1_frame

pytestmark = pytest.mark.integration

JAN = calendar.timegm((2026, 1, 10, 12, 0, 0)) * 1000
FEB = calendar.timegm((2026, 2, 10, 12, 0, 0)) * 1000
JAN_1, FEB_1, MAR_1 = (calendar.timegm((2026, m, 1, 0, 0, 0)) * 1000 for m in (1, 2, 3))
CHANNEL, ALICE = ById("500", "chan"), ById("1001", "alice")


def _story() -> list[ChatEvent]:
    """alice (1001) and bob chat in January and February in channel 500, hours apart; one of alice's January
    messages is deleted (CLEARMSG: her login only)."""
    return alice_and_bob((JAN, FEB), lines=6, step_ms=3_600_000)


@pytest.fixture
def session(sink_settings: SinkSettings) -> Iterator[Any]:
    cluster, session = connect(sink_settings, keyspace=sink_settings.cassandra_keyspace)
    yield session
    cluster.shutdown()


def _reads(session: Any) -> dict[str, Any]:
    """What every store read of alice gives, on a new store (no cache)."""
    store = CassandraStore(session, channels_ttl_s=60)

    async def main() -> dict[str, Any]:
        def lines(lo: int, hi: int, *, reverse: bool = False) -> Any:
            return store.user_lines(CHANNEL, ALICE, lo, hi, reverse=reverse)

        answers = {}  # every format's bytes, each of a read of its own (a line keeps its parse)
        for fmt in Format:
            encode = _encoder(fmt)
            answers[fmt] = [encode(x) async for x in lines(JAN_1, MAR_1)] + [
                encode(x) async for x in store.user_lines("chan", "alice", JAN_1, MAR_1, reverse=True)
            ]
        return {
            "answers": answers,
            "jan": [(x.sent_at, str(x.message_id), x.raw) async for x in lines(JAN_1, FEB_1)],
            "jan_desc": [(x.sent_at, x.raw) async for x in lines(JAN_1, FEB_1, reverse=True)],
            "part": [x.raw async for x in lines(JAN + 3_600_000, JAN + 4 * 3_600_000)],
            "part_desc": [x.raw async for x in lines(JAN + 3_600_000, JAN + 4 * 3_600_000, reverse=True)],
            "both": [x.raw async for x in lines(JAN_1, MAR_1)],
            "count": await store.user_count(CHANNEL, ALICE, JAN_1, MAR_1),
            "count_part": await store.user_count(CHANNEL, ALICE, JAN + 1, FEB_1),
            "months": await store.user_months(CHANNEL, ALICE),
            "latest": await store.latest_user_month(CHANNEL, ALICE),
            "by_login": [x.raw async for x in store.user_lines("chan", "alice", JAN_1, FEB_1)],
        }

    return asyncio.run(main())


def _presets(session: Any) -> tuple[int, int]:
    """How many of alice's lines (read by id, by login) come with their chat from a packed month's frame."""
    store = CassandraStore(session, channels_ttl_s=60)

    async def main() -> tuple[int, int]:
        by_id = [x._chat async for x in store.user_lines(CHANNEL, ALICE, JAN_1, MAR_1)]
        by_login = [x._chat async for x in store.user_lines("chan", "alice", JAN_1, MAR_1)]
        return sum(c is not None for c in by_id), sum(c is not None for c in by_login)

    return asyncio.run(main())


def _rows(session: Any, user_key: str, period: int) -> list[Any]:
    rows = session.execute(
        "SELECT sent_at, packed_rows FROM chat_by_user WHERE channel_key = '500' AND user_key = %s "
        "AND period = %s",
        (user_key, period),
    )
    return list(rows)


def test_a_packed_month_reads_as_its_rows_did(sink_settings: SinkSettings, session: Any) -> None:
    write(sink_settings, _story())
    before = _reads(session)
    assert len(before["jan"]) == 7 and before["count"] == (13, "1001") and len(before["part"]) == 3
    assert _presets(session) == (0, 0)

    report = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0)

    # January and February are over: alice's and bob's months and alice's login key's January
    assert (report.months, report.packed, report.rows) == (5, 5, 25)
    jan = month_period(JAN)
    assert [(r.sent_at, r.packed_rows) for r in _rows(session, "1001", jan)] == [(None, 6)]
    assert [(r.sent_at, r.packed_rows) for r in _rows(session, "login:alice", jan)] == [(None, 1)]
    assert _reads(session) == before
    assert _presets(session) == (12, 12)  # alice's chat messages (not the deletion) come with their chat
    store = CassandraStore(session, channels_ttl_s=60)
    picked = {asyncio.run(store.random_user_event(CHANNEL, ALICE)).text for _ in range(40)}  # type: ignore[union-attr]
    assert picked <= {f"a{i}" for i in range(6)} and len(picked) > 1

    again = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0)
    assert (again.months, again.packed) == (5, 0)

    # a packed month flagged spilled since (its later half days are read with the frame): read the same
    session.execute(
        "UPDATE chat_by_user SET spilled = true WHERE channel_key = '500' AND user_key = '1001' "
        "AND period = %s",
        (month_period(JAN),),
    )
    assert _reads(session) == before and _presets(session) == (12, 12)


def test_a_late_row_is_read_with_the_frame_once_and_packed_by_the_next_run(
    sink_settings: SinkSettings, session: Any
) -> None:
    story = _story()
    write(sink_settings, story)
    pack_months(session, sink_settings.cassandra_keyspace, settle_s=0)
    late = line_event(
        "PRIVMSG", "chan", JAN + 90_000, login="alice", user_id="1001", room_id="500", text="late"
    )
    replayed = story[2]  # alice's a1, already in the frame, written again (a replay)
    assert replayed.text == "a1"
    write(sink_settings, [late, replayed])

    reads = _reads(session)
    texts = [raw.rsplit(" :", 1)[-1] for _at, _id, raw in reads["jan"]]
    assert texts == [
        "a0",
        "a0",
        "late",
        "a1",
        "a2",
        "a3",
        "a4",
        "a5",
    ]  # a0 and its deletion, then in time order
    assert reads["jan_desc"] == [(at, raw) for at, _id, raw in reads["jan"]][::-1]
    assert reads["count"] == (14, "1001")

    report = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0)
    assert (report.packed, report.rows) == (1, 7)
    assert [(r.sent_at, r.packed_rows) for r in _rows(session, "1001", month_period(JAN))] == [(None, 7)]
    assert _reads(session) == reads


def test_a_partition_written_lately_or_spilled_is_left_as_it_is(
    sink_settings: SinkSettings, session: Any
) -> None:
    write(sink_settings, _story())
    session.execute(
        "UPDATE chat_by_user SET spilled = true WHERE channel_key = '500' AND user_key = '2002' "
        "AND period = %s",
        (month_period(JAN),),
    )
    recent = pack_months(session, sink_settings.cassandra_keyspace, settle_s=3600)
    assert recent.packed == 0 and recent.skipped == {
        "recent": 4,
        "spilled": 1,
        "large": 0,
        "dropped": 0,
        "damaged": 0,
    }
    assert len(_rows(session, "1001", month_period(JAN))) == 6  # the rows as they were

    settled = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0)
    assert settled.packed == 4 and settled.skipped["spilled"] == 1
    assert len(_rows(session, "2002", month_period(JAN))) == 6  # bob's spilled January: rows still


class _WithoutFrameColumns:
    """A session on a keyspace from before ``chatlog init`` added the frame's columns, as the store's start
    sees it: ``system_schema`` lists no ``packed`` column."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if "system_schema.columns" in str(query) and params and "packed" in params:
            return []
        return self._session.execute(query, params, **kwargs)


def test_a_store_on_a_keyspace_without_the_frame_columns_reads_its_rows(
    sink_settings: SinkSettings, session: Any
) -> None:
    write(sink_settings, _story())
    rows = _reads(session)
    assert _reads(_WithoutFrameColumns(session)) == rows  # `(blob)null AS packed`: valid, and nothing lost
    assert len(rows["jan"]) == 7
    with pytest.raises(ChatlogError, match="`chatlog init` adds it"):
        pack_months(_WithoutFrameColumns(session), sink_settings.cassandra_keyspace)


def test_rows_older_than_a_drop_of_the_frame_columns_are_not_packed(
    sink_settings: SinkSettings, session: Any
) -> None:
    write(sink_settings, _story())
    before = _reads(session)
    # dropped and added again: Cassandra ignores the column's cells written before the drop, and a frame
    # carries its rows' write time, so packing these rows would hide them
    session.execute("ALTER TABLE chat_by_user DROP (packed, packed_rows)")
    session.execute("ALTER TABLE chat_by_user ADD (packed blob STATIC, packed_rows int STATIC)")
    report = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0)
    assert report.packed == 0 and report.skipped["dropped"] == 5
    assert _reads(session) == before
    assert len(_rows(session, "1001", month_period(JAN))) == 6


def _packed_in_version_1(
    sink_settings: SinkSettings, session: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[ChatEvent], dict[str, Any]]:
    """The story written and packed as version 1 wrote frames (read as its rows were, no chat split); the
    story and what the reads gave before it was packed."""
    story = _story()
    write(sink_settings, story)
    before = _reads(session)
    with monkeypatch.context() as patched:
        patched.setattr(sink_pack, "packed_frame", lambda rows, level: v1_frame(rows, level=level))
        assert pack_months(session, sink_settings.cassandra_keyspace, settle_s=0).packed == 5
    assert _reads(session) == before and _presets(session) == (0, 0)
    return story, before


def test_a_month_packed_in_version_1_reads_as_its_rows_did_and_is_packed_again_with_late_rows(
    sink_settings: SinkSettings, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    story, before = _packed_in_version_1(sink_settings, session, monkeypatch)
    assert pack_months(session, sink_settings.cassandra_keyspace, settle_s=0).packed == 0  # left as it is

    write(sink_settings, [story[2]])  # a replay of alice's a1: her January packed again, in version 3
    assert pack_months(session, sink_settings.cassandra_keyspace, settle_s=0).packed == 1
    assert _reads(session) == before and _presets(session) == (6, 6)


def test_repack_writes_the_months_packed_in_an_older_version_anew_once(
    sink_settings: SinkSettings, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    story, before = _packed_in_version_1(sink_settings, session, monkeypatch)

    report = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0, repack=True)

    assert (report.packed, report.repacked, report.rows) == (0, 5, 25)
    assert "5 packed again in version 3" in report.summary()
    chats = sum(e.user_id == "1001" and e.kind == "PRIVMSG" and bool(e.text) for e in story)
    assert _reads(session) == before and _presets(session) == (chats, chats)  # every chat line split now
    again = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0, repack=True)
    assert (again.packed, again.repacked) == (0, 0)  # the current version: left as it is
    session.execute(
        "UPDATE chat_by_user SET packed = 0x00 "
        "WHERE channel_key = '500' AND user_key = '2002' AND period = %s",
        (month_period(JAN),),
    )
    damaged = pack_months(session, sink_settings.cassandra_keyspace, settle_s=0, repack=True)
    assert (damaged.repacked, damaged.skipped["damaged"]) == (0, 1)  # said, and left as it is
