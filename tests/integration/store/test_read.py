"""store/read.py (:class:`~store.read.LogReader`) on the real Cassandra, over blocks store.write wrote the
way a sink writes them (micro-batches of shuffled events: a period's lines in several overlapping blocks): a
renamed user and a renamed channel are one history by id and by either name; lines without ids are read by
login; a timeout of a user is in that user's log; ranges, order and paging; names, days, months, counts,
senders and random picks; a stored line that does not parse comes back as a line."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, date, datetime
from typing import Any
from uuid import uuid4

import pytest

from core.settings import StackSettings
from core.testing import chat_events
from schemas.chat_event import ChatEvent
from store.keys import filed_under, message_uuid, month_end_ms, month_start_ms
from store.protocol import ById, Channel, Named
from store.read import LogReader
from tests.integration.serve.events import privmsg, write
from tests.integration.serve.rename_story import (
    CHANNEL_KEYS,
    DAY,
    HOUR,
    T0,
    in_read_order,
    of_channel,
    of_user,
    rename_story,
    says,
)
from tests.integration.store.reading import (
    BATCH,
    FAR,
    OWNED,
    HeldMonths,
    Recorded,
    as_read,
    events,
    run,
    shuffled,
)

pytestmark = pytest.mark.integration

_Scans = set[tuple[Any, ...]]
"""The partitions whose blocks a read asked for."""


@pytest.fixture
def story(fresh_keyspace: StackSettings) -> list[ChatEvent]:
    events_ = rename_story()
    write(fresh_keyspace, shuffled(events_), batch=BATCH)
    return events_


CHANNELS: list[Named] = ["oldchan", "#NewChan", ById("500", "newchan")]
USERS: list[Named] = ["oldname", "NEWNAME", ById("1001", "newname")]


def test_a_channel_reads_the_same_whatever_the_page_size(story: list[ChatEvent], session: Any) -> None:
    expected = in_read_order(of_channel(story))

    async def main() -> list[list[ChatEvent]]:
        out = []
        for fetch_size in (1, 3, 1000):
            reader = LogReader(session, fetch_size=fetch_size, channels_ttl_s=0)
            out.append(await events(reader.channel_lines("newchan", 0, FAR)))
            out.append(await events(reader.channel_lines("newchan", T0 + DAY + 1, T0 + 4 * DAY)))
        return out

    got = asyncio.run(main())
    window = [e for e in expected if T0 + DAY + 1 <= e.sent_at < T0 + 4 * DAY]
    assert got == [expected, window] * 3 and 0 < len(window) < len(expected)


def test_a_channel_streams_day_by_day_with_the_next_day_asked_ahead(
    story: list[ChatEvent], session: Any
) -> None:
    expected = in_read_order(of_channel(story))
    recorded = Recorded(session)

    async def main() -> tuple[list[ChatEvent], list[tuple[Any, ...]], list[ChatEvent], list[tuple[Any, ...]]]:
        reader = LogReader(recorded, fetch_size=3, channels_ttl_s=60)
        whole = await events(reader.channel_lines("newchan", 0, FAR))
        scans, recorded.sent = recorded.scans(), []
        lines = reader.channel_lines("newchan", 0, FAR)
        first = [(await anext(lines)).event]
        await asyncio.sleep(0.2)  # let any read-ahead start
        await lines.aclose()  # type: ignore[attr-defined]
        return whole, scans, first, recorded.scans()

    whole, scans, first, early = asyncio.run(main())
    assert whole == expected
    days = sorted({e.sent_at // DAY for e in expected})
    # each partition of each day asked once, day after day (the renamed channel: several keys a day)
    assert [p[1] for p in scans] == sorted(p[1] for p in scans) and {p[1] for p in scans} == set(days)
    assert len(scans) == len(set(scans)) and {p[0] for p in scans} == CHANNEL_KEYS
    # one line read: the first day's partitions and the next day's asked, none of a later day
    assert first == expected[:1]
    assert {p[1] for p in early} == set(days[:2]) and set(early) <= set(scans)


def test_a_reverse_read_asks_each_partition_once_when_its_blocks_fit_one_page(
    story: list[ChatEvent], session: Any
) -> None:
    channel = in_read_order(of_channel(story))
    lo, hi = channel[40].sent_at, channel[350].sent_at  # across the burst and the month's end

    async def main(fetch_size: int) -> tuple[list[ChatEvent], list[tuple[Any, ...]]]:
        recorded = Recorded(session)
        reader = LogReader(recorded, fetch_size=fetch_size, channels_ttl_s=60)
        await reader.latest_day("newchan")  # the keys and days looked up before: only the scans are left
        recorded.sent = []
        return await events(reader.channel_lines("newchan", lo, hi, reverse=True)), recorded.scans()

    whole, at_once = asyncio.run(main(1000))
    paged, apart = asyncio.run(main(1))
    assert whole == paged == [e for e in channel if lo <= e.sent_at < hi][::-1] and len(whole) > 300
    # one page: the blocks' times come with the blocks; paged: one more query for the times beforehand
    assert len(at_once) == len(set(at_once)) > 1
    assert set(apart) == set(at_once) and len(apart) > len(at_once)


def test_a_channels_days_are_asked_once_per_key_within_the_cache_time(
    story: list[ChatEvent], session: Any
) -> None:
    recorded = Recorded(session)

    async def main() -> tuple[list[date | None], list[int]]:
        reader = LogReader(recorded, channels_ttl_s=60)
        days, sent = [], []
        for channel in ("newchan", "newchan", "#NewChan", "nochan"):
            before = len(recorded.sent)
            days.append(await reader.latest_day(channel))
            sent.append(len(recorded.sent) - before)
        return days, sent

    days, sent = asyncio.run(main())
    latest = max(e.sent_at for e in of_channel(story))
    assert days == [datetime.fromtimestamp(latest / 1000, UTC).date()] * 3 + [None]
    # newchan: its login's id, that id's logins, then the days of each of its keys; then nothing more;
    # nochan: its login's ids (none), the days of its login's key
    assert sent == [2 + len(CHANNEL_KEYS), 0, 0, 2]


def test_a_renamed_channel_is_one_history_by_id_and_by_either_name(
    story: list[ChatEvent], session: Any
) -> None:
    expected = in_read_order(of_channel(story))
    assert len(expected) == 364 and {e.channel for e in expected} == {"oldchan", "newchan"}
    assert sum(e.channel_id is None for e in expected) >= 7  # the plain IRC lines, keyed by login

    async def body(reader: LogReader) -> list[list[ChatEvent]]:
        return [
            await events(reader.channel_lines(c, 0, FAR, reverse=r)) for c in CHANNELS for r in (False, True)
        ]

    got = run(session, body)
    for i, read in enumerate(got):
        assert read == (expected[::-1] if i % 2 else expected), (CHANNELS[i // 2], i % 2)
    ties = [str(e.text) for e in got[0] if e.sent_at == T0 + 4 * DAY + 777]
    assert ties[-1] == "tie plain" and sorted(ties[:2]) == ["tie a", "tie b"]  # v4 before v5 in a millisecond


def test_a_renamed_user_is_one_history_by_id_and_by_either_name(story: list[ChatEvent], session: Any) -> None:
    expected = in_read_order(of_user(story))
    kinds = Counter(e.kind for e in expected)
    assert kinds == {"PRIVMSG": 24 + 300 + 1, "CLEARCHAT": 5, "CLEARMSG": 1}
    assert {e.user_login for e in expected} == {"oldname", "newname", None}
    assert all(e.channel in ("oldchan", "newchan") for e in expected)  # not the other channel's

    async def body(reader: LogReader) -> list[list[ChatEvent]]:
        return [
            await events(reader.user_lines(c, u, 0, FAR, reverse=r))
            for c in CHANNELS
            for u in USERS
            for r in (False, True)
        ]

    got = run(session, body)
    assert len(got) == 18
    for i, read in enumerate(got):
        assert read == (expected[::-1] if i % 2 else expected), i


def test_a_timeout_is_in_the_log_of_the_user_it_names(story: list[ChatEvent], session: Any) -> None:
    timeouts = in_read_order([e for e in of_channel(story) if e.kind == "CLEARCHAT"])
    got = run(session, lambda r: events(r.user_lines("newchan", "oldname", 0, FAR)))
    assert [e for e in got if e.kind == "CLEARCHAT"] == timeouts
    assert [e.text for e in timeouts] == ["oldname", "newname", "newname", "newname", "newname"]
    other = run(session, lambda r: events(r.user_lines("newchan", "other", 0, FAR)))
    assert other and all(e.user_login == "other" for e in other)


def test_ranges_reverse_and_paging(story: list[ChatEvent], session: Any) -> None:
    channel = in_read_order(of_channel(story))
    user = in_read_order(of_user(story))
    lo, hi = channel[40].sent_at, channel[350].sent_at  # across the burst and the month's end

    async def body(reader: LogReader) -> tuple[list[ChatEvent], ...]:
        return (
            await events(reader.channel_lines("newchan", lo, hi)),
            await events(reader.channel_lines("newchan", lo, hi, reverse=True)),
            await events(reader.user_lines("newchan", "newname", lo, hi)),
            await events(reader.user_lines(ById("500", "x"), ById("1001", "y"), lo, hi, reverse=True)),
            await events(reader.channel_lines("newchan", hi, lo)),
            await events(reader.user_lines("newchan", "newname", hi, hi)),
        )

    forward, backward, mine, mine_back, empty, none = run(session, body)
    assert forward == [e for e in channel if lo <= e.sent_at < hi] and len(forward) > 300
    assert backward == forward[::-1]
    assert mine == [e for e in user if lo <= e.sent_at < hi] and len(mine) > 300
    assert mine_back == mine[::-1]
    assert empty == [] and none == []


def test_a_range_within_an_hour_reads_that_hour(story: list[ChatEvent], session: Any) -> None:
    """Ranges that start and end within a block of the burst, and the last hours of a UTC day (a chat
    client's recent messages): exactly the lines sent in them, either way."""
    channel = in_read_order(of_channel(story))
    burst = [e for e in channel if (e.text or "").startswith("burst")]
    ranges = [(burst[10].sent_at, burst[11].sent_at + 1), (burst[0].sent_at + 1, burst[-1].sent_at)]
    ranges.append((T0 + 6 * HOUR, T0 + 12 * HOUR))  # 18:00 to midnight

    async def body(reader: LogReader) -> list[list[ChatEvent]]:
        return [
            await events(reader.channel_lines("newchan", lo, hi, reverse=r))
            for lo, hi in ranges
            for r in (False, True)
        ]

    got = run(session, body)
    for i, (lo, hi) in enumerate(ranges):
        want = [e for e in channel if lo <= e.sent_at < hi]
        assert want and got[2 * i] == want and got[2 * i + 1] == want[::-1], (lo, hi)
    assert len(got[0]) == 2 and len(got[2]) == len(burst) - 2


def test_names_days_months_counts_senders_and_random_picks(story: list[ChatEvent], session: Any) -> None:
    channel = of_channel(story)
    user = of_user(story)

    async def body(reader: LogReader) -> dict[str, Any]:
        pick = await reader.random_channel_event("oldchan")
        mine = await reader.random_user_event(ById("500", "newchan"), "oldname")
        return {
            "channels": await reader.channels(),
            "channel_by_id": [await reader.channel_by_id(i) for i in ("500", "600", "999", "")],
            "user_by_id": [await reader.user_by_id("newchan", i) for i in ("1001", "2002", "999")],
            "ids": [await reader.channel_id("oldchan"), await reader.user_id("oldname")],
            "days": await reader.channel_days("oldchan"),
            "latest": await reader.latest_day(ById("500", "newchan")),
            "nothing": await reader.latest_day("nochan"),
            "months": await reader.user_months("newchan", "oldname"),
            "latest_month": await reader.latest_user_month("oldchan", ById("1001", "n")),
            "no_month": await reader.latest_user_month("oldchan", "nobody"),
            "count": await reader.user_count("oldchan", "newname", 0, FAR),
            "count_feb": await reader.user_count("oldchan", "newname", T0 + 2 * DAY, FAR),
            "nobody": await reader.user_count("oldchan", "nobody", 0, FAR),
            "senders": Counter([s async for s in reader.senders("newchan", 0, FAR)]),
            "history": await reader.user_name_history("1001"),
            "pick": pick,
            "mine": mine,
        }

    got = run(session, body)
    assert got["channels"] == [Channel("elsewhere", "600"), Channel("newchan", "500")]
    assert got["channel_by_id"] == ["newchan", "elsewhere", None, None]
    assert got["user_by_id"] == ["newname", "other", None]
    assert got["ids"] == ["500", "1001"]
    days = sorted({datetime.fromtimestamp(e.sent_at / 1000, UTC).date() for e in channel}, reverse=True)
    assert got["days"] == days and got["latest"] == days[0] and got["nothing"] is None
    assert got["months"] == [(2026, 2), (2026, 1)] and got["latest_month"] == (2026, 2)
    assert got["no_month"] is None
    assert got["count"] == (len(user), "1001")
    assert got["count_feb"][0] == sum(e.sent_at >= T0 + 2 * DAY for e in user)
    assert got["nobody"] == (0, None)
    assert got["senders"] == Counter((e.user_login, e.user_id) for e in channel)
    assert list(dict.fromkeys(n.login for n in got["history"])) == ["oldname", "newname"]  # oldest first
    assert got["pick"].message_id in {e.message_id for e in channel}
    assert got["mine"].message_id in {e.message_id for e in user}


@pytest.mark.parametrize("ids", [True, False])
def test_chat_events_read_back_by_login_and_id(
    fresh_keyspace: StackSettings, session: Any, ids: bool
) -> None:
    """The test data of every other test: with Twitch ids, and as a plain IRC server sends them (no ids:
    every key is a login)."""
    written = chat_events(900, channels=2, now_ms=T0, ids=ids)
    write(fresh_keyspace, written[1::2] + written[::2], batch=200)
    chan0 = in_read_order([e for e in written if e.channel == "chan0"])
    user5 = in_read_order(
        [e for e in written if e.channel == "chan0" and filed_under(e) in ("1005", "login:user5")]
    )
    user3 = in_read_order([e for e in written if e.channel == "chan0" and e.user_login == "user3"])
    assert {"CLEARCHAT"} <= {e.kind for e in user5} and "CLEARMSG" in {e.kind for e in user3}

    async def body(reader: LogReader) -> list[list[ChatEvent]]:
        reads = [
            reader.channel_lines("chan0", 0, FAR),
            reader.user_lines("chan0", "user5", 0, FAR),
            reader.user_lines("#CHAN0", "User3", 0, FAR),
        ]
        if ids:
            reads += [
                reader.channel_lines(ById("500", "chan0"), 0, FAR),
                reader.user_lines(ById("500", "chan0"), ById("1005", "user5"), 0, FAR),
            ]
        return [await events(r) for r in reads]

    OWNED.clear()
    got = run(session, body)
    assert got[:3] == [chan0, user5, user3]
    if ids:
        assert got[3:] == [chan0, user5]
    assert OWNED[True] >= (2 * len(user5) if ids else 0)  # user5 by login and by id; without ids: none


def test_a_users_month_asks_only_the_key_pairs_that_can_hold_it(
    fresh_keyspace: StackSettings, session: Any
) -> None:
    """Twitch lines carry the room's id: a channel's ``login:`` key holds no day, so no user's month under
    it is asked. A user's ``login:`` key is asked only in a channel where some line is filed under a login (a
    deleted message names its sender by login only): chan0 has such lines, chan9 (chat only) none."""
    written = chat_events(300, channels=1, now_ms=T0, ids=True)
    chat = [e for e in written if e.kind == "PRIVMSG" and filed_under(e) == "1005"]
    assert chat and any(str(filed_under(e)).startswith("login:") for e in written)  # deleted messages
    only_chat = [
        privmsg(
            "chan9", e.sent_at, "user5", f"again {i}", room_id="509", user_id="1005", message_id=str(uuid4())
        )
        for i, e in enumerate(chat)
    ]
    write(fresh_keyspace, [*written, *only_chat], batch=100)
    recorded = Recorded(session)

    async def main() -> tuple[list[list[ChatEvent]], list[list[tuple[Any, ...]]]]:
        reader = LogReader(recorded, channels_ttl_s=60)
        read, asked = [], []
        for room, name in (("500", "chan0"), ("509", "chan9")):
            recorded.sent = []
            read.append(await events(reader.user_lines(ById(room, name), ById("1005", "user5"), 0, FAR)))
            asked.append([v for v in recorded.sent if len(v) == 2])  # user_months: (channel key, user key)
        return read, asked

    (chan0, chan9), (asked0, asked9) = asyncio.run(main())
    assert chan0 == in_read_order([e for e in written if filed_under(e) in ("1005", "login:user5")])
    assert chan9 == in_read_order(only_chat)
    assert sorted(asked0) == [("500", "1005"), ("500", "login:user5")]  # not login:chan0's
    assert asked9 == [("509", "1005")]


def test_a_users_month_by_ids_asks_no_name_in_a_channel_of_twitch_lines(
    fresh_keyspace: StackSettings, session: Any
) -> None:
    """Read by ids (the channel's and the user's) in a channel whose lines all carry ids, a user's month asks
    none of the user's names (they only matter where lines are filed under a login), neither does asking for
    the user's or the channel's id; two reads at once of the same months ask them once."""
    said = [
        privmsg(
            "chan9",
            T0 + i * 60_000,
            "user5",
            f"hi {i}",
            room_id="509",
            user_id="1005",
            message_id=str(uuid4()),
        )
        for i in range(30)
    ]
    write(fresh_keyspace, shuffled(said), batch=7)
    recorded = Recorded(session)
    channel, user = ById("509", "chan9"), ById("1005", "user5")
    month = (month_start_ms(202601), month_end_ms(202601))

    async def main() -> tuple[list[list[ChatEvent]], tuple[str | None, str | None], int]:
        reader = LogReader(recorded, channels_ttl_s=60)
        read = [
            await events(reader.user_lines(channel, user, *month)),
            await events(reader.user_lines(channel, user, 0, FAR)),
        ]
        ids = (await reader.user_id(user), await reader.channel_id(channel))
        fresh = LogReader(recorded, channels_ttl_s=60)
        before = len(recorded.sent)
        await asyncio.gather(fresh.user_months(channel, user), fresh.user_months(channel, user))
        months_asked = recorded.sent[before:].count(("509", "1005"))
        return read, ids, months_asked

    (in_month, whole), ids, months_asked = asyncio.run(main())
    expected = in_read_order(said)
    assert whole == expected and in_month == [e for e in expected if month[0] <= e.sent_at < month[1]]
    assert in_month  # T0 is in January
    assert ("1005",) not in recorded.sent  # the user's names (user_names by id) never asked
    assert ids == ("1005", "509")
    assert months_asked == 1


def test_a_users_month_asks_its_first_part_beside_its_months(story: list[ChatEvent], session: Any) -> None:
    """A forward read of one month starts the scan of part 0 of that month of each key pair while the pair's
    months are still being asked (one round trip, not two), and reads what it read before; a reversed read
    or a range over two months waits for the months first."""
    held = HeldMonths(session)
    january = (month_start_ms(202601), month_end_ms(202601))

    async def read(lo: int, hi: int, reverse: bool = False) -> tuple[_Scans, _Scans, list[ChatEvent]]:
        reader = LogReader(held, channels_ttl_s=60)
        held.hold()
        task = asyncio.ensure_future(events(reader.user_lines("newchan", "newname", lo, hi, reverse=reverse)))
        await held.asked()  # the names and the channel's days answered; the user's months held
        await asyncio.sleep(0.3)  # what the reader sends while it waits for them
        while_held = set(held.scans())
        held.release()
        got = await task
        return while_held, set(held.scans()), got

    async def main() -> list[tuple[_Scans, _Scans, list[ChatEvent]]]:
        return [await read(*january), await read(*january, reverse=True), await read(january[0], FAR)]

    (ahead, scans, month), (back_ahead, _, back), (wide_ahead, _, wide) = asyncio.run(main())
    mine = in_read_order(of_user(story))
    expected = [e for e in mine if january[0] <= e.sent_at < january[1]]
    assert expected and month == expected and back == expected[::-1] and wide == mine
    # every part 0 of January the read used was asked before the months came; nothing else was
    assert ahead and {p for p in scans if p[2:] == (202601, 0)} <= ahead
    assert {p[2:] for p in ahead} == {(202601, 0)}
    assert back_ahead == set() and wide_ahead == set()


def test_a_stored_line_that_does_not_parse_comes_back(fresh_keyspace: StackSettings, session: Any) -> None:
    """Another producer's record on the topic: its raw is no IRC line. It is read back as that line."""
    foreign = ChatEvent(
        message_id="third-party-1",
        kind="PRIVMSG",
        channel="weird",
        user_login="someone",
        text="hello",
        sent_at=T0,
        received_at=T0 + 5,
        raw="this is not irc",
    )
    fine = says(T0 + 1, "someone", None, "a real line", channel="weird")
    write(fresh_keyspace, [foreign, fine])

    async def body(reader: LogReader) -> tuple[list[ChatEvent], list[ChatEvent], ChatEvent | None]:
        return (
            await events(reader.channel_lines("weird", 0, FAR)),
            await events(reader.user_lines("weird", "someone", 0, FAR, reverse=True)),
            await reader.random_user_event("weird", "someone"),
        )

    channel, user, picked = run(session, body)
    odd = ChatEvent(
        message_id=str(message_uuid("third-party-1")),
        kind="this",
        channel="weird",
        sent_at=T0,
        received_at=T0 + 5,
        raw="this is not irc",
    )
    assert channel == [odd, *as_read([fine])]
    assert user == channel[::-1]
    assert picked == as_read([fine])[0]  # a random pick is something a user said


def test_random_picks_are_spread_over_bunched_lines(fresh_keyspace: StackSettings, session: Any) -> None:
    """Issue 36: a lone line, then 41 lines of one user within 4 s (another hour, another block): picking a
    block and then a line of it gave the lone line half the time."""
    lone = says(T0 + 3_600_000, "quiet", "3003", "lone", channel="bunched")
    burst = [says(T0 + 7_200_000 + i * 100, "burst", "3004", f"b{i}", channel="bunched") for i in range(41)]
    write(fresh_keyspace, [lone, *burst])
    draws = 300

    async def body(reader: LogReader) -> tuple[Counter[str], Counter[str]]:
        channel: Counter[str] = Counter()
        user: Counter[str] = Counter()
        for _ in range(draws):
            picked = await reader.random_channel_event("bunched")
            mine = await reader.random_user_event("bunched", "burst")
            assert picked is not None and mine is not None
            channel[picked.text or ""] += 1
            user[mine.text or ""] += 1
        return channel, user

    channel, user = run(session, body)
    # uniform: each of 42 lines ~7 times in 300 draws (the lone line ~150 times before the fix)
    assert channel["lone"] < 30 and len(channel) >= 30, channel.most_common(3)
    assert set(user) <= {f"b{i}" for i in range(41)} and len(user) >= 30, user.most_common(3)
    assert max(user.values()) < 30, user.most_common(3)
