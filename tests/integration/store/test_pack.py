"""``chatlog pack`` (store.pack) on the real Cassandra, over blocks written as the sink writes them (a task's
lines of a partition are a block): a packed period reads exactly as its blocks did (every read of the
store: a user's month both ways and in every format, a part of it, counts, months, random picks, the
channel's days); a line written after the pack is read once beside the packed block and packed in by the
next run, which keeps one copy of a replayed line; a closed period written within the settle time is left
as it is, a period not over is packed up to the settle time (the next run packs in what came since); a
block written again while it is packed stays; the packed block keeps the longest TTL left; running it again
packs nothing."""

from __future__ import annotations

import asyncio
import calendar
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from core.settings import StackSettings
from core.times import now_ms
from schemas.chat_event import ChatEvent
from serve.api.params import Format
from serve.api.stream import _encoder
from store.blocks import CHANNEL, USER, Table
from store.keys import day_of, month_of, month_start_ms
from store.pack import Blocks, pack, read, rewrite
from store.protocol import ById
from store.read import LogReader
from store.scan import stored_ids
from store.write import Caches, TaskWrite, WriteOptions, worker_session_of
from tests.integration.serve.events import alice_and_bob, line_event

pytestmark = pytest.mark.integration

JAN = calendar.timegm((2026, 1, 10, 12, 0, 0)) * 1000
FEB = calendar.timegm((2026, 2, 10, 12, 0, 0)) * 1000
JAN_1, FEB_1, MAR_1 = (calendar.timegm((2026, m, 1, 0, 0, 0)) * 1000 for m in (1, 2, 3))
CHANNEL_500, ALICE = ById("500", "chan"), ById("1001", "alice")
TASK = 5
"""Events per writing task (a micro-batch): a month of alice's is then three blocks."""
CLOSED = 7
"""The story's closed partitions: two channel days, four user months, alice's login key's January."""
MULTI = 6
"""Those of more than one block (alice's login key's January is one CLEARMSG: one block)."""


def _story() -> list[ChatEvent]:
    """alice (1001) and bob chat in January and February in channel 500, hours apart; one of alice's January
    messages is deleted (CLEARMSG: her login only)."""
    return alice_and_bob((JAN, FEB), lines=6, step_ms=3_600_000)


@pytest.fixture
def keyspace(fresh_keyspace: StackSettings) -> str:
    return fresh_keyspace.cassandra_keyspace


def write(
    session: Any, keyspace: str, events: Sequence[ChatEvent], *, task: int = TASK, ttl_s: int = 0
) -> None:
    """``events`` written as the sink's tasks write them, ``task`` events a task (a new process's caches:
    every index row written)."""
    options = WriteOptions(keyspace=keyspace, ttl_s=ttl_s, retry_s=30.0)
    writer = TaskWrite(worker_session_of(session), options, Caches())
    for n, event in enumerate(events, 1):
        writer.add(event)
        if n % task == 0:
            writer.finish()
    writer.finish()


@pytest.fixture
def story(session: Any, keyspace: str) -> list[ChatEvent]:
    """The story (:func:`_story`), written into the keyspace."""
    events = _story()
    write(session, keyspace, events)
    return events


def _reads(session: Any) -> dict[str, Any]:
    """What every read of the store gives of alice and of the channel, on a new reader (no cache)."""
    reader = LogReader(session, channels_ttl_s=60)

    async def main() -> dict[str, Any]:
        def lines(lo: int, hi: int, *, reverse: bool = False) -> Any:
            return reader.user_lines(CHANNEL_500, ALICE, lo, hi, reverse=reverse)

        answers = {}  # every format's bytes, each of a read of its own (a line keeps its parse)
        for fmt in Format:
            encode = _encoder(fmt)
            answers[fmt] = [encode([x]) async for x in lines(JAN_1, MAR_1)] + [
                encode([x]) async for x in reader.user_lines("chan", "alice", JAN_1, MAR_1, reverse=True)
            ]
        channel = reader.channel_lines(CHANNEL_500, JAN_1, MAR_1)
        channel_desc = reader.channel_lines(CHANNEL_500, JAN_1, MAR_1, reverse=True)
        return {
            "answers": answers,
            "jan": [(x.sent_at, str(x.message_id), x.raw) async for x in lines(JAN_1, FEB_1)],
            "jan_desc": [(x.sent_at, x.raw) async for x in lines(JAN_1, FEB_1, reverse=True)],
            "part": [x.raw async for x in lines(JAN + 3_600_000, JAN + 4 * 3_600_000)],
            "part_desc": [x.raw async for x in lines(JAN + 3_600_000, JAN + 4 * 3_600_000, reverse=True)],
            "both": [x.raw async for x in lines(JAN_1, MAR_1)],
            "count": await reader.user_count(CHANNEL_500, ALICE, JAN_1, MAR_1),
            "count_part": await reader.user_count(CHANNEL_500, ALICE, JAN + 1, FEB_1),
            "months": await reader.user_months(CHANNEL_500, ALICE),
            "latest": await reader.latest_user_month(CHANNEL_500, ALICE),
            "by_login": [x.raw async for x in reader.user_lines("chan", "alice", JAN_1, FEB_1)],
            "channel": [(x.sent_at, x.raw) async for x in channel],
            "channel_desc": [x.raw async for x in channel_desc],
            "days": await reader.channel_days(CHANNEL_500),
            "senders": [s async for s in reader.senders(CHANNEL_500, JAN_1, MAR_1)],
        }

    return asyncio.run(main())


def _blocks(
    session: Any, keyspace: str, table: Table, key: tuple[Any, ...]
) -> list[tuple[Any, int, int | None]]:
    """(block id, write time µs, ttl s) of each block of a partition."""
    return [(row[1], row[3], row[4]) for row in read(Blocks(session, keyspace, table), key).rows]


def _alice_january() -> tuple[Any, ...]:
    return ("500", "1001", month_of(JAN), 0)


def _once(session: Any, keyspace: str) -> None:
    """Every line is in one block of each copy."""
    for copy in ("channel", "user"):
        counted = Counter(stored_ids(session, keyspace, copy))
        assert set(counted.values()) == {1}, counted.most_common(3)


def test_a_packed_period_reads_as_its_blocks_did(session: Any, keyspace: str, story: list[ChatEvent]) -> None:
    before = _reads(session)
    assert len(before["jan"]) == 7 and before["count"] == (13, "1001") and len(before["part"]) == 3
    assert len(before["channel"]) == 25 and len(before["days"]) == 2
    assert len(_blocks(session, keyspace, USER, _alice_january())) == 3

    report = pack(session, keyspace, settle_s=0)

    # January and February are over: the channel's two days, alice's and bob's months, alice's login key's
    # January (one block: left as it is)
    assert (report.partitions, report.packed, report.skipped_recent) == (CLOSED, MULTI, 0)
    assert report.by_table == {"channel_blocks": 2, "user_blocks": 4}
    assert report.lines == 13 + 12 + 4 * 6 and report.blocks_after < report.blocks_before
    assert len(_blocks(session, keyspace, USER, _alice_january())) == 1
    hours = {e.sent_at // 3_600_000 for e in story if e.sent_at < FEB_1}  # a channel's block: an hour at most
    assert len(_blocks(session, keyspace, CHANNEL, ("500", day_of(JAN), 0))) == len(hours)
    assert _reads(session) == before
    _once(session, keyspace)
    reader = LogReader(session, channels_ttl_s=60)
    picked = {asyncio.run(reader.random_user_event(CHANNEL_500, ALICE)).text for _ in range(40)}  # type: ignore[union-attr]
    assert picked <= {f"a{i}" for i in range(6)} and len(picked) > 1
    in_channel = {asyncio.run(reader.random_channel_event(CHANNEL_500)).text for _ in range(40)}  # type: ignore[union-attr]
    assert in_channel <= {f"{w}{i}" for w in "ab" for i in range(6)} and len(in_channel) > 2

    again = pack(session, keyspace, settle_s=0)
    assert (again.partitions, again.packed) == (CLOSED, 0)
    assert _reads(session) == before


def test_a_late_line_is_read_with_the_packed_block_once_and_packed_in_by_the_next_run(
    session: Any, keyspace: str, story: list[ChatEvent]
) -> None:
    pack(session, keyspace, settle_s=0)
    late = line_event(
        "PRIVMSG", "chan", JAN + 90_000, login="alice", user_id="1001", room_id="500", text="late"
    )
    replayed = story[2]  # alice's a1, already in the packed block, written again (a replay)
    assert replayed.text == "a1"
    write(session, keyspace, [late, replayed])

    reads = _reads(session)
    texts = [raw.rsplit(" :", 1)[-1] for _at, _id, raw in reads["jan"]]
    assert texts == ["a0", "a0", "late", "a1", "a2", "a3", "a4", "a5"]  # a0 and its deletion, then in order
    assert reads["jan_desc"] == [(at, raw) for at, _id, raw in reads["jan"]][::-1]
    assert reads["count"] == (14, "1001") and len(reads["channel"]) == 26
    assert len(_blocks(session, keyspace, USER, _alice_january())) == 2

    report = pack(session, keyspace, settle_s=0)
    assert report.packed == 2 and report.by_table == {"channel_blocks": 1, "user_blocks": 1}
    assert report.lines == 7 + 14  # alice's January, the channel's January day: each line once
    assert len(_blocks(session, keyspace, USER, _alice_january())) == 1
    assert _reads(session) == reads
    _once(session, keyspace)  # the replayed a1: one copy left in each


@pytest.mark.usefixtures("story")
def test_a_period_not_over_or_written_within_the_settle_time_is_left_as_it_is(
    session: Any, keyspace: str
) -> None:
    now = now_ms()
    today = [  # alice today, in three tasks: her month and the channel's day are not over
        line_event(
            "PRIVMSG", "chan", now - 60_000 + i, login="alice", user_id="1001", room_id="500", text=f"t{i}"
        )
        for i in range(3)
    ]
    write(session, keyspace, today, task=1)
    this_month = ("500", "1001", month_of(now), 0)
    assert len(_blocks(session, keyspace, USER, this_month)) == 3
    before = _reads(session)

    recent = pack(session, keyspace, settle_s=3600)  # every block was written just now
    assert (recent.partitions, recent.packed, recent.skipped_recent) == (CLOSED, 0, MULTI)
    assert recent.open_packed == 0  # today's lines were sent within the settle time
    assert len(_blocks(session, keyspace, USER, _alice_january())) == 3  # the blocks as they were
    assert len(_blocks(session, keyspace, USER, this_month)) == 3

    settled = pack(session, keyspace, settle_s=0)
    assert (settled.partitions, settled.packed) == (CLOSED, MULTI)
    # today's day and this month are not over: packed up to now (settle 0), as open partitions
    assert (settled.open_partitions, settled.open_packed) == (2, 2)
    assert len(_blocks(session, keyspace, USER, this_month)) == 1
    assert len(_blocks(session, keyspace, CHANNEL, ("500", day_of(now), 0))) == 1
    assert _reads(session) == before


def _alice_lines(session: Any, lo: int, hi: int) -> list[tuple[int, str]]:
    reader = LogReader(session, channels_ttl_s=60)

    async def main() -> list[tuple[int, str]]:
        return [(x.sent_at, x.raw) async for x in reader.user_lines(CHANNEL_500, ALICE, lo, hi)]

    return asyncio.run(main())


def test_an_open_period_is_packed_up_to_the_settle_time_and_the_next_run_packs_in_what_came_since(
    session: Any, keyspace: str
) -> None:
    now = now_ms()
    month = month_of(now)
    if now - month_start_ms(month) < 3_600_000:
        pytest.skip("the month began less than an hour ago: its lines would span two months")

    def said(at: int, text: str) -> ChatEvent:
        return line_event("PRIVMSG", "chan", at, login="alice", user_id="1001", room_id="500", text=text)

    older = [said(now - 1_800_000 + i, f"o{i}") for i in range(3)]  # half an hour ago
    newer = [said(now - 5_000 + i, f"n{i}") for i in range(2)]  # seconds ago
    write(session, keyspace, older + newer, task=1)
    key = ("500", "1001", month, 0)
    lo, hi = month_start_ms(month), now + 1
    before = _alice_lines(session, lo, hi)
    assert [raw.rsplit(" :", 1)[-1] for _at, raw in before] == ["o0", "o1", "o2", "n0", "n1"]
    assert len(_blocks(session, keyspace, USER, key)) == 5

    first = pack(session, keyspace, settle_s=600)  # the older lines were sent before the settle time

    assert first.open_packed >= 1 and first.packed == 0
    assert len(_blocks(session, keyspace, USER, key)) == 1 + 2  # the older three packed, the newer left
    assert _alice_lines(session, lo, hi) == before

    again = pack(session, keyspace, settle_s=600)  # nothing sent before the settle time came since
    assert again.open_packed == 0 and len(_blocks(session, keyspace, USER, key)) == 3

    rest = pack(session, keyspace, settle_s=0)
    assert rest.open_packed >= 1 and len(_blocks(session, keyspace, USER, key)) == 1
    assert _alice_lines(session, lo, hi) == before
    _once(session, keyspace)


def test_a_block_written_again_while_its_period_is_packed_stays_and_is_packed_in_next(
    session: Any, keyspace: str, story: list[ChatEvent]
) -> None:
    before = _reads(session)
    blocks = Blocks(session, keyspace, USER)
    blocks.write = worker_session_of(session).prepared(keyspace, "LOCAL_QUORUM", 120.0)
    key = _alice_january()
    found = read(blocks, key)
    first = {row[1] for row in found.rows}
    write(session, keyspace, story[:TASK])  # a replay of the first task, between the pack's read and write

    assert rewrite(blocks, key, found) == (3, 1, 6, 0, True)

    # the first task's block, written again after the read, is newer than the delete of it: it stays
    left = _blocks(session, keyspace, USER, key)
    assert len(left) == 2 and len({b for b, _w, _t in left} & first) == 1
    assert _reads(session) == before  # each line once
    again = pack(session, keyspace, settle_s=0)
    assert len(_blocks(session, keyspace, USER, key)) == 1 and again.by_table.get("user_blocks", 0) >= 1
    assert _reads(session) == before


def test_the_packed_block_keeps_the_longest_ttl_left(session: Any, keyspace: str) -> None:
    day_s = 86_400
    alice = [e for e in _story() if e.user_id == "1001" and e.sent_at < FEB_1]  # her January: 6 lines
    write(session, keyspace, alice[:3], task=3, ttl_s=day_s)
    write(session, keyspace, alice[3:], task=3, ttl_s=2 * day_s)
    ttls = sorted(t or 0 for _b, _w, t in _blocks(session, keyspace, USER, _alice_january()))
    assert len(ttls) == 2 and ttls[0] <= day_s < ttls[1] <= 2 * day_s

    pack(session, keyspace, settle_s=0)

    ((_block, _written, ttl),) = _blocks(session, keyspace, USER, _alice_january())
    assert ttl is not None and day_s < ttl <= 2 * day_s

    # a period with a block that never expires: the packed block does not either
    bob = [e for e in _story() if e.user_id == "2002" and e.sent_at < FEB_1]
    write(session, keyspace, bob[:3], task=3, ttl_s=day_s)
    write(session, keyspace, bob[3:], task=3)
    pack(session, keyspace, settle_s=0)
    ((_block, _written, ttl),) = _blocks(session, keyspace, USER, ("500", "2002", month_of(JAN), 0))
    assert ttl is None


def test_a_partition_of_more_blocks_than_a_batch_holds_is_rewritten_in_several(
    session: Any, keyspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A month of a user who spoke in most micro-batches can hold more blocks than a batch can delete
    (65,535 statements): the rewrite goes in several single-partition batches, the new block in the first."""
    import store.pack

    monkeypatch.setattr(store.pack, "MAX_BATCH_STATEMENTS", 4)
    alice = [e for e in _story() if e.user_id == "1001" and e.sent_at < FEB_1]  # her January's lines
    write(session, keyspace, alice, task=1)  # a block each
    assert len(_blocks(session, keyspace, USER, _alice_january())) == len(alice)
    before = _reads(session)

    report = pack(session, keyspace, settle_s=0)  # 1 insert and a delete per block: two batches or more

    assert report.by_table.get("user_blocks") == 1
    assert len(_blocks(session, keyspace, USER, _alice_january())) == 1
    assert _reads(session) == before
    _once(session, keyspace)
