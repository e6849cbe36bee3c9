"""serve/store/cassandra_store.py on the real Cassandra, over rows the sink's executor wrote (issue 17): a
renamed user and a renamed channel are one history by id and by either name; lines without ids are read by
login; a timeout of a user is in that user's log; ranges, order and paging; a stored line that does not
parse comes back as a line."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, date, datetime
from typing import Any, TypeVar

import msgspec
import pytest
from schemas.cql import message_uuid
from sink.writer.rows import DERIVED

from consent.rule import whose
from core.testing import chat_events
from schemas.chat_event import ChatEvent
from sink.settings import SinkSettings
from store.line import LogLine
from store.protocol import ById, Channel, Named
from store.read import CassandraStore
from tests.integration.serve.events import write
from tests.integration.serve.rename_story import (
    CHANNEL_KEYS,
    DAY,
    T0,
    in_read_order,
    of_channel,
    of_user,
    rename_story,
    says,
)

pytestmark = pytest.mark.integration

T = TypeVar("T")
FAR = 253_402_300_799_999


def _run(session: Any, body: Callable[[CassandraStore], Awaitable[T]]) -> T:
    """``body`` with a store of small pages and batches (so paging, read-ahead and batching are used)."""

    async def main() -> T:
        store = CassandraStore(
            session, fetch_size=50, read_ahead=3, probe_batch=1, bucket_batch=2, channels_ttl_s=0
        )
        return await body(store)

    return asyncio.run(main())


OWNED: Counter[bool] = Counter()
"""How many lines read came with their partition's ids (``LogLine.owner``) and how many without."""


async def _all(lines: AsyncIterator[LogLine]) -> list[ChatEvent]:
    """The events of ``lines``; each line's own fields (read without a parse) are its event's, its owner
    the ids the opt-out rule decides it by."""
    out = []
    async for line in lines:
        raw, sent_at, chat, owner = line.raw, line.sent_at, line.chat(), line.owner
        event = line.event
        assert (raw, sent_at) == (event.raw, event.sent_at)
        if chat is not None:
            assert event.kind == "PRIVMSG" and chat == (event.channel, event.user_login, event.text)
        if owner is not None:
            assert owner == (event.channel_id, whose(event)[0])
        OWNED[owner is not None] += 1
        out.append(event)
    return out


@pytest.fixture
def story(sink_settings: SinkSettings, session: Any) -> list[ChatEvent]:
    events = rename_story()
    write(sink_settings, events)
    return events


CHANNELS: list[Named] = ["oldchan", "#NewChan", ById("500", "newchan")]
USERS: list[Named] = ["oldname", "NEWNAME", ById("1001", "newname")]


def test_a_channel_reads_the_same_bucket_by_bucket_and_in_bucket_runs(
    story: list[ChatEvent], session: Any
) -> None:
    expected = in_read_order(of_channel(story))

    async def main() -> list[list[ChatEvent]]:
        out = []
        for batch in (1, 3, 1000):
            store = CassandraStore(session, fetch_size=7, read_ahead=2, bucket_batch=batch, channels_ttl_s=0)
            out.append(await _all(store.channel_lines("newchan", 0, FAR)))
            out.append(await _all(store.channel_lines("newchan", T0 + DAY + 1, T0 + 4 * DAY)))
        return out

    got = asyncio.run(main())
    window = [e for e in expected if T0 + DAY + 1 <= e.sent_at < T0 + 4 * DAY]
    assert got == [expected, window] * 3 and 0 < len(window) < len(expected)


class _Recorded:
    """A session that records each statement it sends to Cassandra: its CQL, and the page sizes of the
    channel table's row queries (:attr:`sizes`)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.sizes: list[int] = []
        self.sent: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute_async(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        cql = getattr(statement, "prepared_statement", statement).query_string
        self.sent.append(cql)
        if "FROM chat_by_channel" in cql:
            self.sizes.append(statement.fetch_size)
        return self._session.execute_async(statement, *args, **kwargs)


def test_a_channel_streams_in_pages_that_grow(story: list[ChatEvent], session: Any) -> None:
    expected = in_read_order(of_channel(story))
    recorded = _Recorded(session)

    async def main() -> tuple[list[ChatEvent], list[int], list[ChatEvent], list[int]]:
        store = CassandraStore(recorded, fetch_size=48, first_page=3, read_ahead=1, bucket_batch=2)
        whole = await _all(store.channel_lines("newchan", 0, FAR))
        sizes, recorded.sizes = recorded.sizes, []
        lines = store.channel_lines("newchan", 0, FAR)
        first = [(await anext(lines)).event]
        await asyncio.sleep(0.2)  # let any read-ahead start
        await lines.aclose()  # type: ignore[attr-defined]
        return whole, sizes, first, recorded.sizes

    whole, sizes, first, early = asyncio.run(main())
    assert whole == expected
    # a query per key of a bucket group (a bucket both of the renamed channel's keys hold: two)
    assert sizes == sorted(sizes) and set(sizes) == {3, 6, 12, 24, 48} and sizes.count(48) > 2
    # one line read: the first group's queries and the next one's started, of the two smallest sizes
    assert first == expected[:1] and early == sizes[: len(early)] and set(early) == {3, 6}


def test_whether_a_channel_is_logged_is_asked_once_per_key_within_the_cache_time(
    story: list[ChatEvent], session: Any
) -> None:
    recorded = _Recorded(session)

    async def main() -> list[date | None]:
        cached = CassandraStore(recorded, channels_ttl_s=60)
        return [await cached.latest_day("newchan") for _ in range(3)] + [await cached.latest_day("nochan")]

    days = asyncio.run(main())
    latest = max(e.sent_at for e in of_channel(story))
    assert days == [datetime.fromtimestamp(latest / 1000, UTC).date()] * 3 + [None]
    # newchan: its id's key and both its logins' (CHANNEL_KEYS); nochan: its login's; each asked once
    assert sum("FROM chat_buckets" in cql and "DESC" in cql for cql in recorded.sent) == len(CHANNEL_KEYS) + 1


def test_a_renamed_channel_is_one_history_by_id_and_by_either_name(
    story: list[ChatEvent], session: Any
) -> None:
    expected = in_read_order(of_channel(story))
    assert len(expected) == 364 and {e.channel for e in expected} == {"oldchan", "newchan"}
    assert sum(e.channel_id is None for e in expected) >= 7  # the plain IRC lines, keyed by login

    async def body(store: CassandraStore) -> list[list[ChatEvent]]:
        return [
            await _all(store.channel_lines(c, 0, FAR, reverse=r)) for c in CHANNELS for r in (False, True)
        ]

    got = _run(session, body)
    for i, events in enumerate(got):
        assert events == (expected[::-1] if i % 2 else expected), (CHANNELS[i // 2], i % 2)
    ties = [str(e.text) for e in got[0] if e.sent_at == T0 + 4 * DAY + 777]
    assert ties[-1] == "tie plain" and sorted(ties[:2]) == ["tie a", "tie b"]  # v4 before v5 in a millisecond


def test_a_renamed_user_is_one_history_by_id_and_by_either_name(story: list[ChatEvent], session: Any) -> None:
    expected = in_read_order(of_user(story))
    kinds = Counter(e.kind for e in expected)
    assert kinds == {"PRIVMSG": 24 + 300 + 1, "CLEARCHAT": 5, "CLEARMSG": 1}
    assert {e.user_login for e in expected} == {"oldname", "newname", None}
    assert all(e.channel in ("oldchan", "newchan") for e in expected)  # not the other channel's

    async def body(store: CassandraStore) -> list[list[ChatEvent]]:
        return [
            await _all(store.user_lines(c, u, 0, FAR, reverse=r))
            for c in CHANNELS
            for u in USERS
            for r in (False, True)
        ]

    got = _run(session, body)
    assert len(got) == 18
    for i, events in enumerate(got):
        assert events == (expected[::-1] if i % 2 else expected), i


def test_a_timeout_is_in_the_log_of_the_user_it_names(story: list[ChatEvent], session: Any) -> None:
    timeouts = in_read_order([e for e in of_channel(story) if e.kind == "CLEARCHAT"])
    got = _run(session, lambda s: _all(s.user_lines("newchan", "oldname", 0, FAR)))
    assert [e for e in got if e.kind == "CLEARCHAT"] == timeouts
    assert [e.text for e in timeouts] == ["oldname", "newname", "newname", "newname", "newname"]
    other = _run(session, lambda s: _all(s.user_lines("newchan", "other", 0, FAR)))
    assert other and all(e.user_login == "other" for e in other)


def test_ranges_reverse_and_paging(story: list[ChatEvent], session: Any) -> None:
    channel = in_read_order(of_channel(story))
    user = in_read_order(of_user(story))
    lo, hi = channel[40].sent_at, channel[350].sent_at  # across the burst and the month's end

    async def body(store: CassandraStore) -> tuple[list[ChatEvent], ...]:
        return (
            await _all(store.channel_lines("newchan", lo, hi)),
            await _all(store.channel_lines("newchan", lo, hi, reverse=True)),
            await _all(store.user_lines("newchan", "newname", lo, hi)),
            await _all(store.user_lines(ById("500", "x"), ById("1001", "y"), lo, hi, reverse=True)),
            await _all(store.channel_lines("newchan", hi, lo)),
            await _all(store.user_lines("newchan", "newname", hi, hi)),
        )

    forward, backward, mine, mine_back, empty, none = _run(session, body)
    assert forward == [e for e in channel if lo <= e.sent_at < hi] and len(forward) > 300
    assert backward == forward[::-1]
    assert mine == [e for e in user if lo <= e.sent_at < hi] and len(mine) > 300
    assert mine_back == mine[::-1]
    assert empty == [] and none == []


def test_names_days_months_counts_senders_and_random_picks(story: list[ChatEvent], session: Any) -> None:
    channel = of_channel(story)
    user = of_user(story)

    async def body(store: CassandraStore) -> dict[str, Any]:
        pick = await store.random_channel_event("oldchan")
        mine = await store.random_user_event(ById("500", "newchan"), "oldname")
        return {
            "channels": await store.channels(),
            "channel_by_id": [await store.channel_by_id(i) for i in ("500", "600", "999", "")],
            "user_by_id": [await store.user_by_id("newchan", i) for i in ("1001", "2002", "999")],
            "days": await store.channel_days("oldchan"),
            "latest": await store.latest_day(ById("500", "newchan")),
            "nothing": await store.latest_day("nochan"),
            "months": await store.user_months("newchan", "oldname"),
            "latest_month": await store.latest_user_month("oldchan", ById("1001", "n")),
            "no_month": await store.latest_user_month("oldchan", "nobody"),
            "count": await store.user_count("oldchan", "newname", 0, FAR),
            "count_feb": await store.user_count("oldchan", "newname", T0 + 2 * DAY, FAR),
            "nobody": await store.user_count("oldchan", "nobody", 0, FAR),
            "senders": Counter([s async for s in store.senders("newchan", 0, FAR)]),
            "pick": pick,
            "mine": mine,
        }

    got = _run(session, body)
    assert got["channels"] == [Channel("elsewhere", "600"), Channel("newchan", "500")]
    assert got["channel_by_id"] == ["newchan", "elsewhere", None, None]
    assert got["user_by_id"] == ["newname", "other", None]
    days = sorted({date.fromtimestamp(e.sent_at // 1000) for e in channel}, reverse=True)
    assert got["days"] == days and got["latest"] == days[0] and got["nothing"] is None
    assert got["months"] == [(2026, 2), (2026, 1)] and got["latest_month"] == (2026, 2)
    assert got["no_month"] is None
    assert got["count"] == (len(user), "1001")
    assert got["count_feb"][0] == sum(e.sent_at >= T0 + 2 * DAY for e in user)
    assert got["nobody"] == (0, None)
    assert got["senders"] == Counter((e.user_login, e.user_id) for e in channel)
    assert got["pick"].message_id in {e.message_id for e in channel}
    assert got["mine"].message_id in {e.message_id for e in user}


@pytest.mark.parametrize("ids", [True, False])
def test_chat_events_read_back_by_login_and_id(sink_settings: SinkSettings, session: Any, ids: bool) -> None:
    """The test data of every other test: with Twitch ids, and as a plain IRC server sends them (no ids:
    every key is a login)."""
    events = chat_events(900, channels=2, now_ms=T0, ids=ids)
    write(sink_settings, events)
    chan0 = in_read_order([e for e in events if e.channel == "chan0"])
    user5 = in_read_order(
        [e for e in events if e.channel == "chan0" and DERIVED["user_key"](e) in ("1005", "login:user5")]
    )
    user3 = in_read_order([e for e in events if e.channel == "chan0" and e.user_login == "user3"])
    assert {"CLEARCHAT"} <= {e.kind for e in user5} and "CLEARMSG" in {e.kind for e in user3}

    async def body(store: CassandraStore) -> list[list[ChatEvent]]:
        reads = [
            store.channel_lines("chan0", 0, FAR),
            store.user_lines("chan0", "user5", 0, FAR),
            store.user_lines("#CHAN0", "User3", 0, FAR),
        ]
        if ids:
            reads += [
                store.channel_lines(ById("500", "chan0"), 0, FAR),
                store.user_lines(ById("500", "chan0"), ById("1005", "user5"), 0, FAR),
            ]
        return [await _all(r) for r in reads]

    OWNED.clear()
    got = _run(session, body)
    assert got[:3] == [chan0, user5, user3]
    if ids:
        assert got[3:] == [chan0, user5]
    assert OWNED[True] >= (2 * len(user5) if ids else 0)  # user5 by login and by id; without ids: none


def test_a_stored_line_that_does_not_parse_comes_back(sink_settings: SinkSettings, session: Any) -> None:
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
    write(sink_settings, [foreign, fine])

    async def body(store: CassandraStore) -> tuple[list[ChatEvent], list[ChatEvent], Any]:
        return (
            await _all(store.channel_lines("weird", 0, FAR)),
            await _all(store.user_lines("weird", "someone", 0, FAR, reverse=True)),
            await store.random_user_event("weird", "someone"),
        )

    channel, user, _ = _run(session, body)
    odd = ChatEvent(
        message_id=str(message_uuid("third-party-1")),
        kind="this",
        channel="weird",
        sent_at=T0,
        received_at=T0 + 5,
        raw="this is not irc",
    )
    assert channel == [odd, msgspec.structs.replace(fine, ingester=None)]
    assert user == channel[::-1]


def test_random_picks_are_spread_over_bunched_lines(sink_settings: SinkSettings, session: Any) -> None:
    """Issue 36: a lone line, then 41 lines of one user within 4 s (another bucket): picking a bucket and
    an instant in it gave the lone line half the time and the burst's first line nearly always."""
    lone = says(T0 + 3_600_000, "quiet", "3003", "lone", channel="bunched")
    burst = [says(T0 + 7_200_000 + i * 100, "burst", "3004", f"b{i}", channel="bunched") for i in range(41)]
    write(sink_settings, [lone, *burst])
    draws = 300

    async def body(store: CassandraStore) -> tuple[Counter[str], Counter[str]]:
        channel: Counter[str] = Counter()
        user: Counter[str] = Counter()
        for _ in range(draws):
            picked = await store.random_channel_event("bunched")
            mine = await store.random_user_event("bunched", "burst")
            assert picked is not None and mine is not None
            channel[picked.text or ""] += 1
            user[mine.text or ""] += 1
        return channel, user

    channel, user = _run(session, body)
    # uniform: each of 42 lines ~7 times in 300 draws (the lone line ~150 times before the fix)
    assert channel["lone"] < 30 and len(channel) >= 30, channel.most_common(3)
    assert set(user) <= {f"b{i}" for i in range(41)} and len(user) >= 30, user.most_common(3)
    assert max(user.values()) < 30, user.most_common(3)
