"""store/read.py (:class:`~store.read.LogReader`) on the real Cassandra, over a period's lines wherever the
writers put them (docs/storage.md): a period past a writer's part bytes (a bot, a busy channel) goes on in
its smaller parts, and a replay by a new process writes into part 0 and the parts both; a closed period
packed by store.pack, and a late write into a packed period; a deleted message filed under its author's
login key, in the one month it was sent. Every way, a channel's and a user's history read once each line, in
order, with the same days, months, counts and picks."""

from __future__ import annotations

import asyncio
import calendar
from collections import Counter
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from core.settings import StackSettings
from core.times import now_ms
from schemas.chat_event import ChatEvent
from store.blocks import CHANNEL, USER, Table
from store.keys import month_end_ms, month_start_ms, user_part
from store.layout import LAYOUT
from store.pack import pack, partitions
from store.protocol import ById, Named
from store.read import LogReader
from store.scan import stored_ids
from store.schema import apply_schema, found_layout, record_layout
from store.write import Caches, PartGuard
from tests.integration.serve.events import alice_and_bob, privmsg, write
from tests.integration.serve.rename_story import (
    DAY,
    HOUR,
    T0,
    in_read_order,
    of_channel,
    of_user,
    rename_story,
)
from tests.integration.store.reading import BATCH, FAR, Recorded, events, run, shuffled

pytestmark = pytest.mark.integration


def _reads(session: Any) -> dict[str, Any]:
    """What the story's reads give (a new reader: nothing cached)."""
    mid = T0 + DAY + 3 * HOUR

    async def body(reader: LogReader) -> dict[str, Any]:
        return {
            "all": await events(reader.user_lines("newchan", "newname", 0, FAR)),
            "back": await events(
                reader.user_lines(ById("500", "c"), ById("1001", "u"), 0, FAR, reverse=True)
            ),
            "feb": await events(reader.user_lines("oldchan", "oldname", T0 + 2 * DAY, FAR)),
            "part": await events(reader.user_lines("newchan", "newname", T0, mid)),
            "months": await reader.user_months("newchan", "oldname"),
            "latest": await reader.latest_user_month("oldchan", ById("1001", "n")),
            "count": (await reader.user_count("oldchan", "newname", 0, FAR))[0],
            "pick": await reader.random_user_event("newchan", "newname"),
            "channel": await events(reader.channel_lines("oldchan", 0, FAR)),
            "channel_back": await events(reader.channel_lines(ById("500", "c"), 0, FAR, reverse=True)),
            "channel_part": await events(reader.channel_lines("newchan", T0 + 3 * DAY, T0 + 3 * DAY + HOUR)),
            "days": await reader.channel_days("newchan"),
            "senders": Counter([s async for s in reader.senders("newchan", 0, FAR)]),
            "channel_pick": await reader.random_channel_event("newchan"),
        }

    return run(session, body)


def _check(got: dict[str, Any], story: list[ChatEvent]) -> None:
    mine = in_read_order(of_user(story))
    assert got["all"] == mine and len(mine) == 331
    assert got["back"] == mine[::-1]
    assert got["feb"] == [e for e in mine if e.sent_at >= T0 + 2 * DAY]
    assert got["part"] == [e for e in mine if e.sent_at < T0 + DAY + 3 * HOUR]
    assert got["months"] == [(2026, 2), (2026, 1)] and got["latest"] == (2026, 2)
    assert got["count"] == len(mine)
    assert got["pick"].message_id in {e.message_id for e in mine}
    channel = in_read_order(of_channel(story))
    assert got["channel"] == channel and len(channel) == 364
    assert got["channel_back"] == channel[::-1]
    hour = [e for e in channel if T0 + 3 * DAY <= e.sent_at < T0 + 3 * DAY + HOUR]
    assert got["channel_part"] == hour and len(hour) > 300  # the burst
    days = sorted({datetime.fromtimestamp(e.sent_at / 1000, UTC).date() for e in channel}, reverse=True)
    assert got["days"] == days
    assert got["senders"] == Counter((e.user_login, e.user_id) for e in channel)
    assert got["channel_pick"].message_id in {e.message_id for e in channel}


def _partitions(session: Any, table: Table) -> list[tuple[Any, ...]]:
    """The keys of ``table``'s partitions (every period of the story is closed)."""
    found = partitions(session, session.keyspace, 0, now_ms())
    return [key for kind, key, closed in found if kind == table and closed]


def _copies(session: Any) -> dict[str, int]:
    """How many copies of its lines each copy (``channel``, ``user``) stores beyond one each."""
    out = {}
    for copy in ("channel", "user"):
        ids = stored_ids(session, session.keyspace, copy)
        out[copy] = len(ids) - len(set(ids))
    return out


def test_a_period_past_a_writers_part_bytes_goes_on_in_parts_and_a_replay_into_both_reads_once(
    fresh_keyspace: StackSettings, session: Any
) -> None:
    story = rename_story()
    write(fresh_keyspace, shuffled(story), batch=BATCH, caches=Caches(parts=PartGuard(part_bytes=2_000)))
    for table in (CHANNEL, USER):
        parts = Counter(key[-1] == 0 for key in _partitions(session, table))
        assert parts[True] and parts[False], (table, parts)  # part 0 of each period, then smaller parts
    _check(_reads(session), story)
    assert _copies(session) == {"channel": 0, "user": 0}
    # a new process, with a higher bound: the same lines again, into part 0 and into the parts
    write(fresh_keyspace, story, batch=60, caches=Caches(parts=PartGuard(part_bytes=20_000)))
    copies = _copies(session)
    assert copies["channel"] > 0 and copies["user"] > 0  # stored twice
    _check(_reads(session), story)


def test_packed_periods_read_as_before_and_a_late_write_into_one_is_read_once(
    fresh_keyspace: StackSettings, session: Any
) -> None:
    story = rename_story()
    write(fresh_keyspace, shuffled(story), batch=BATCH)
    _check(_reads(session), story)
    packed = pack(session, session.keyspace, settle_s=0)
    assert packed.skipped_recent == 0 and packed.packed > 0 and packed.blocks_after < packed.blocks_before
    assert len(packed.by_table) == 2  # channels' days and users' months
    _check(_reads(session), story)
    assert _copies(session) == {"channel": 0, "user": 0}

    # a replay of some of the burst: a block beside the packed ones in its channel's day and its user's month
    late = [e for e in story if (e.text or "").startswith("burst")][::10]
    write(fresh_keyspace, late)
    assert _copies(session) == {"channel": len(late), "user": len(late)}
    _check(_reads(session), story)
    again = pack(session, session.keyspace, settle_s=0)
    assert again.blocks_before - again.blocks_after == 2  # the late blocks, packed into their periods'
    assert _copies(session) == {"channel": 0, "user": 0}  # each line once again
    _check(_reads(session), story)
    third = pack(session, session.keyspace, settle_s=0)
    assert third.blocks_before == third.blocks_after  # nothing is packed twice


JAN = calendar.timegm((2026, 1, 10, 12, 0, 0)) * 1000
FEB = calendar.timegm((2026, 2, 10, 12, 0, 0)) * 1000
JAN_1, FEB_1, MAR_1 = (calendar.timegm((2026, m, 1, 0, 0, 0)) * 1000 for m in (1, 2, 3))
LOGIN_KEY = "login:alice"


@pytest.mark.parametrize("alice", ["alice", ById("1001", "alice")], ids=["login", "id"])
def test_a_login_key_is_read_only_in_the_months_it_has_lines(
    fresh_keyspace: StackSettings, session: Any, alice: Named
) -> None:
    """alice (1001) chats in January and February; one of her January messages is deleted (CLEARMSG: her
    login only, no id: filed under ``login:alice``). Read by login or by id, her January has the deletion,
    and her February is read from her id's blocks alone."""
    story = alice_and_bob((JAN, FEB), lines=5, step_ms=60_000)
    write(fresh_keyspace, story)
    recorded = Recorded(session)
    alices = in_read_order([e for e in story if e.user_login == "alice"])

    async def main(reader: LogReader) -> dict[str, Any]:
        jan = await events(reader.user_lines("chan", alice, JAN_1, FEB_1))
        jan_scans, recorded.sent = recorded.scans(), []
        feb = await events(reader.user_lines(ById("500", "chan"), alice, FEB_1, MAR_1))
        return {
            "jan": jan,
            "jan_scans": jan_scans,
            "feb": feb,
            "feb_scans": recorded.scans(),
            "months": await reader.user_months("chan", alice),
            "counts": [
                await reader.user_count("chan", alice, lo, hi) for lo, hi in ((JAN_1, FEB_1), (FEB_1, MAR_1))
            ],
        }

    got = run(recorded, main)
    assert got["jan"] == alices[:6] and [e.kind for e in got["jan"]].count("CLEARMSG") == 1
    assert {scan[1] for scan in got["jan_scans"]} == {"1001", LOGIN_KEY}
    assert [e.text for e in got["feb"]] == [f"a{i}" for i in range(5)] and got["feb"] == alices[6:]
    assert {scan[1] for scan in got["feb_scans"]} == {"1001"}  # no line under her login key in February
    assert got["months"] == [(2026, 2), (2026, 1)]
    assert got["counts"] == [(6, "1001"), (5, "1001")]


JANUARY = calendar.timegm((2026, 1, 1, 0, 0, 0)) * 1000


def _named_parts(session: Any, channel_key: str, user_key: str, month: int) -> tuple[set[int], set[int]]:
    """The parts beyond 0 of a user's month: as its part 0 names them, and as ``user_months`` lists them."""
    row = session.execute(
        "SELECT parts FROM user_blocks WHERE channel_key = %s AND user_key = %s AND month = %s AND part = 0",
        (channel_key, user_key, month),
    ).one()
    listed = session.execute(
        "SELECT part FROM user_months WHERE channel_key = %s AND user_key = %s AND month = %s",
        (channel_key, user_key, month),
    )
    return set(row.parts or ()) if row else set(), {r.part for r in listed if r.part}


def test_a_users_month_by_ids_is_one_query_its_part_0_naming_its_parts_and_init_names_them_in_layout_2(
    fresh_keyspace: StackSettings, session: Any
) -> None:
    """A bot's month past a writer's part bytes: part 0's rows name the later parts (its static ``parts``),
    so a read of the month by ids asks no months' index, and reads every part; a range whose lines are all
    in later parts (part 0 has no row there) asks the index. A keyspace of layout 2 (no ``parts``) gets the
    column from ``chatlog init`` and its months' parts named from ``user_months``, no row rewritten."""
    ids = {"room_id": "510", "user_id": "1006"}
    bot = [
        privmsg(
            "chan10",
            JANUARY + i * 10 * HOUR,
            "bot6",
            f"beep {i} " + "x" * 200,
            **ids,
            message_id=str(uuid4()),
        )
        for i in range(60)
    ]
    write(fresh_keyspace, bot, batch=5, caches=Caches(parts=PartGuard(part_bytes=1_500)))
    january = 202601
    named, listed = _named_parts(session, "510", "1006", january)
    assert len(listed) > 3 and named == listed
    channel, user = ById("510", "chan10"), ById("1006", "bot6")
    late = bot[-1].sent_at - 1  # in January's last part

    def read() -> tuple[list[list[ChatEvent]], list[int], list[list[tuple[Any, ...]]]]:
        recorded = Recorded(session)

        async def main() -> tuple[list[list[ChatEvent]], list[int], list[list[tuple[Any, ...]]]]:
            got, months_asked, scans = [], [], []
            for lo, hi in ((month_start_ms(january), month_end_ms(january)), (late, month_end_ms(january))):
                reader = LogReader(recorded, channels_ttl_s=60, fetch_size=1000)
                await reader.channel_id(channel)  # the channel's days and keys: asked before
                recorded.sent = []
                got.append(await events(reader.user_lines(channel, user, lo, hi)))
                months_asked.append(recorded.sent.count(("510", "1006")))
                scans.append(recorded.scans())
            return got, months_asked, scans

        return asyncio.run(main())

    got, months_asked, scans = read()
    expected = in_read_order(bot)
    assert got[0] == expected and got[1] == [e for e in expected if e.sent_at >= late]
    assert months_asked == [0, 1]  # the late range: no row of part 0 there, so the index is asked
    assert {s[2:] for s in scans[0]} == {(january, part) for part in {0, *listed}}
    assert user_part(late) in listed

    user_rows = session.execute("SELECT count(*) FROM user_blocks").one()[0]
    session.execute("ALTER TABLE user_blocks DROP parts")  # as layout 2 had it
    record_layout(session, session.keyspace, 2)
    told: list[str] = []
    apply_schema(fresh_keyspace, tell=told.append)
    assert found_layout(session, session.keyspace) == LAYOUT == 3
    assert _named_parts(session, "510", "1006", january) == (listed, listed)
    assert any("parts beyond 0 of 1 user month(s)" in line for line in told), told
    assert session.execute("SELECT count(*) FROM user_blocks").one()[0] == user_rows
    assert read() == (got, months_asked, scans)
