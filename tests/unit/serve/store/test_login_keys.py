"""Which login user keys a user's read keeps (serve/store/login_keys.py): the index's months read once and
cached (a past month long, the current one briefly), nothing dropped on a keyspace not indexed yet."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from schemas.cql import month_end_ms, month_period, month_start_ms
from serve.store.login_keys import LoginKeys

from core.testing_cassandra import Call, FakeSession

NOW_MS = 1_700_000_000_000  # 2023-11-14
NOW = month_period(NOW_MS)  # 20231100
OCT, SEP = 20231000, 20230900
INDEX = {("7", OCT): ["login:bob"], ("7", NOW): ["login:carol"], ("login:chan", OCT): ["login:alice"]}
PAIRS = [("7", "42"), ("7", "login:alice"), ("7", "login:bob"), ("login:chan", "login:alice")]


def _answer(call: Call) -> list[Any]:
    channel, months = call.params
    return [SimpleNamespace(period=m, user_key=k) for m in months for k in INDEX.get((channel, m), [])]


def _range(first: int, last: int | None = None) -> tuple[int, int]:
    """The range of the months ``first`` to ``last`` (epoch ms)."""
    return month_start_ms(first), month_end_ms(first if last is None else last)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _keys(session: FakeSession, clock: Clock, **kw: Any) -> LoginKeys:
    return LoginKeys(
        session, indexed=True, ttl_s=60, current_ttl_s=5, clock=clock, wall_ms=lambda: NOW_MS, **kw
    )


def test_a_login_key_without_rows_in_the_months_is_dropped_and_an_id_key_never() -> None:
    session, clock = FakeSession(_answer, threaded=False), Clock()
    keys = _keys(session, clock)
    kept = asyncio.run(keys.kept(PAIRS, *_range(SEP, OCT)))
    assert kept == [("7", "42"), ("7", "login:bob"), ("login:chan", "login:alice")]
    assert asyncio.run(keys.kept(PAIRS, *_range(SEP))) == [("7", "42")]  # cached: no query
    assert asyncio.run(keys.kept(PAIRS, *_range(NOW))) == [("7", "42")]
    assert [call.params for call in session.executed] == [
        ("7", [SEP, OCT]),
        ("login:chan", [SEP, OCT]),
        ("7", [NOW]),
        ("login:chan", [NOW]),
    ]
    assert "PER PARTITION LIMIT 10001" in session.prepared[0]


def test_the_current_month_is_read_again_after_a_few_seconds_and_a_past_one_after_the_ttl() -> None:
    session, clock = FakeSession(_answer, threaded=False), Clock()
    keys = _keys(session, clock)
    pair = [("7", "login:dave")]
    assert asyncio.run(keys.kept(pair, *_range(OCT, NOW))) == []
    INDEX[("7", NOW)].append("login:dave")  # the sink writes a new login key into this month
    try:
        clock.now += 4
        assert asyncio.run(keys.kept(pair, *_range(OCT, NOW))) == []  # held
        clock.now += 2
        assert asyncio.run(keys.kept(pair, *_range(OCT, NOW))) == pair  # the current month read again, alone
        assert [call.params[1] for call in session.executed] == [[OCT, NOW], [NOW]]
        clock.now += 60
        asyncio.run(keys.kept(pair, *_range(OCT, NOW)))
        assert session.executed[-1].params[1] == [OCT, NOW]
        assert keys.queries == 3
    finally:
        INDEX[("7", NOW)].remove("login:dave")


def test_a_month_past_the_key_limit_drops_nothing() -> None:
    session, clock = FakeSession(_answer, threaded=False), Clock()
    keys = _keys(session, clock, max_keys=0)
    assert (
        asyncio.run(keys.kept(PAIRS, *_range(OCT))) == PAIRS
    )  # every month read is "unknown": nothing dropped
    assert asyncio.run(keys.kept(PAIRS, *_range(SEP))) == [
        ("7", "42")
    ]  # an empty month is known all the same


def test_a_range_without_an_end_or_empty_drops_nothing() -> None:
    session, clock = FakeSession(_answer, threaded=False), Clock()
    keys = _keys(session, clock)
    assert asyncio.run(keys.kept(PAIRS, month_start_ms(OCT), 253_402_300_799_999)) == PAIRS
    assert asyncio.run(keys.kept(PAIRS, month_start_ms(OCT), month_start_ms(OCT))) == PAIRS
    assert session.executed == []


def test_a_keyspace_not_indexed_keeps_every_pair_without_a_query() -> None:
    session = FakeSession(_answer, threaded=False)
    keys = LoginKeys(session, indexed=False)
    assert asyncio.run(keys.kept(PAIRS, *_range(OCT))) == PAIRS
    assert session.prepared == [] and session.executed == []


def test_the_cache_is_bounded() -> None:
    session, clock = FakeSession(_answer, threaded=False), Clock()
    keys = _keys(session, clock, max_entries=2)
    asyncio.run(keys.present("7", [SEP, OCT]))
    asyncio.run(keys.present("7", [NOW]))  # full: starts over
    asyncio.run(keys.present("7", [SEP]))
    assert [call.params[1] for call in session.executed] == [[SEP, OCT], [NOW], [SEP]]


def test_none_in_says_whether_no_login_key_has_rows_in_the_channel_keys_months() -> None:
    session, clock = FakeSession(_answer, threaded=False), Clock()
    keys = _keys(session, clock)
    assert asyncio.run(keys.none_in(["7"], *_range(SEP)))  # September: nothing indexed
    assert not asyncio.run(keys.none_in(["7"], *_range(SEP, OCT)))  # bob's key in October
    asked = len(session.executed)
    assert asyncio.run(keys.none_in(["7", "login:chan"], *_range(SEP)))  # alice's key is in October only
    assert asyncio.run(keys.none_in(["7"], *_range(SEP)))  # cached: one query more (login:chan's) in all
    assert len(session.executed) == asked + 1
    assert not asyncio.run(keys.none_in(["login:chan"], *_range(OCT)))
    unindexed = LoginKeys(FakeSession(_answer, threaded=False), indexed=False)
    assert not asyncio.run(unindexed.none_in(["7"], *_range(SEP)))  # not indexed: it cannot tell
