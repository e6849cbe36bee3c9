"""ingest.placement: rates, the choice of connection, the rebalance rule and the capacity rule."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.placement import (
    ConnLoad,
    RateTracker,
    Rebalancer,
    admit,
    choose_connection,
    conn_loads,
    pick_moves,
    threshold,
)


def test_rate_tracker_converges_to_a_steady_rate_and_decays() -> None:
    t = RateTracker(tau_s=10.0)
    now = 0.0
    for _ in range(600):  # 60 s of 50 msg/s, fed every 0.1 s
        now += 0.1
        t.add({"hot": 5, "cold": 0}, now)
    assert t.rate("hot", now) == pytest.approx(50.0, rel=0.01)
    assert t.rate("cold", now) == 0.0
    assert t.rate("never", now) == 0.0
    assert t.rate("hot", now + 10.0) == pytest.approx(50.0 / 2.718281828, rel=0.01)  # one tau later
    t.prune({"cold"}, now + 1000.0)
    assert t.known() == {"cold"}


def test_rate_tracker_is_unbiased_for_coarse_or_uneven_intervals() -> None:
    t = RateTracker(tau_s=60.0)
    now = 0.0
    t.add({}, now)
    for i in range(400):
        dt = 5.0 if i % 2 else 1.0
        now += dt
        t.add({"ch": round(120 * dt)}, now)  # 120 msg/s
    assert t.rate("ch", now) == pytest.approx(120.0, rel=1e-3)


def test_rate_tracker_rejects_a_bad_tau() -> None:
    with pytest.raises(ValueError, match="tau_s"):
        RateTracker(0.0)


def test_choose_connection_least_rate_then_count_within_capacity() -> None:
    loads = conn_loads({1: {"a", "b"}, 2: {"c"}, 3: {"d", "e", "f"}}, {"a": 5.0, "b": 5.0, "c": 30.0})
    assert choose_connection(loads, capacity=3) == 1  # rate 10 < 30; conn 3 is full (3 channels)
    loads = conn_loads({1: {"a"}, 2: {"b", "c"}}, {})
    assert choose_connection(loads, capacity=3) == 1  # all rates 0: fewest channels
    assert choose_connection(conn_loads({1: {"a"}}, {}), capacity=1) is None


def test_a_hot_connection_moves_its_hottest_channel_that_fits() -> None:
    rates = {"big": 500.0, "mid": 200.0, "s1": 10.0, "s2": 10.0, "t": 50.0}
    loads = conn_loads({1: {"big", "mid", "s1"}, 2: {"s2"}, 3: {"t"}}, rates)
    # ceiling 400, fit 360: "big" (500) fits nowhere; "mid" (200) goes to conn 2 (10 -> 210)
    moves = pick_moves(loads, rates, capacity=10, ceiling=400.0, ratio=0.0, now=0.0)
    assert [(m.channel, m.source, m.target) for m in moves] == [("mid", 1, 2)]


def test_no_move_below_the_threshold_and_none_into_a_full_connection() -> None:
    rates = {"a": 100.0, "b": 100.0, "c": 1.0}
    loads = conn_loads({1: {"a", "b"}, 2: {"c"}}, rates)
    assert pick_moves(loads, rates, capacity=10, ceiling=500.0, ratio=0.0, now=0.0) == []
    assert pick_moves(loads, rates, capacity=1, ceiling=150.0, ratio=0.0, now=0.0) == []
    assert len(pick_moves(loads, rates, capacity=2, ceiling=150.0, ratio=0.0, now=0.0)) == 1


def test_threshold_is_the_lower_of_ceiling_and_ratio_times_mean() -> None:
    loads = [ConnLoad(1, frozenset(), 300.0), ConnLoad(2, frozenset(), 100.0)]
    assert threshold(loads, 1000.0, 1.25) == 250.0
    assert threshold(loads, 200.0, 1.25) == 200.0
    assert threshold(loads, 1000.0, 0.0) == 1000.0


def test_cool_down_per_channel_and_per_source_connection() -> None:
    rates = {"a": 100.0, "b": 90.0, "c": 80.0, "z": 1.0}
    holdings = {1: {"a", "b", "c"}, 2: {"z"}, 3: set[str]()}
    r = Rebalancer(ceiling=120.0, cooldown_s=60.0, ratio=0.0)  # targets end <= 108
    first = r.plan(conn_loads(holdings, rates), rates, capacity=10, now=0.0)
    assert [(m.channel, m.source, m.target) for m in first] == [("a", 1, 3)]
    holdings = {1: {"b", "c"}, 2: {"z"}, 3: {"a"}}  # conn 1 still at 170
    assert r.plan(conn_loads(holdings, rates), rates, capacity=10, now=30.0) == []  # source cooling down
    again = r.plan(conn_loads(holdings, rates), rates, capacity=10, now=61.0)
    assert [(m.channel, m.source, m.target) for m in again] == [("b", 1, 2)]  # 1 + 90 <= 108
    assert r.moves == 2


def test_a_channel_in_its_cool_down_is_not_moved_back() -> None:
    rates = {"a": 100.0, "b": 100.0}
    r = Rebalancer(ceiling=150.0, cooldown_s=60.0, ratio=0.0)
    m = r.plan(conn_loads({1: {"a", "b"}, 2: set()}, rates), rates, capacity=10, now=0.0)
    assert len(m) == 1
    moved = m[0].channel
    rates[moved] = 200.0  # a rate swing makes conn 2 hot; the channel it holds just moved
    holdings = {1: {"a", "b"} - {moved}, 2: {moved}}
    assert r.plan(conn_loads(holdings, rates), rates, capacity=10, now=10.0) == []


rate_maps = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4), st.floats(0, 1000, allow_nan=False), min_size=1, max_size=40
)


@settings(max_examples=200, deadline=None)
@given(rate_maps, st.integers(2, 6), st.integers(1, 50), st.floats(10, 2000), st.floats(0, 2), st.randoms())
def test_moves_never_overload_a_target_nor_exceed_capacity(
    rates: dict[str, float], n_conns: int, capacity: int, ceiling: float, ratio: float, rnd: random.Random
) -> None:
    holdings: dict[int, set[str]] = {i: set() for i in range(1, n_conns + 1)}
    for ch in rates:
        holdings[rnd.randint(1, n_conns)].add(ch)
    capacity = max(capacity, *(len(v) for v in holdings.values()))
    loads = conn_loads(holdings, rates)
    limit = threshold(loads, ceiling, ratio)
    moves = pick_moves(loads, rates, capacity=capacity, ceiling=ceiling, ratio=ratio, now=0.0)
    before = {c.conn_id: c.rate for c in loads}
    assert len({m.source for m in moves}) == len(moves)  # one move per source
    for m in moves:
        assert before[m.source] > limit  # only hot connections shed
        assert m.channel in holdings[m.source]
        holdings[m.source].discard(m.channel)
        holdings[m.target].add(m.channel)
    after = {c.conn_id: c.rate for c in conn_loads(holdings, rates)}
    for m in moves:
        assert after[m.target] <= limit * 0.9 + 1e-6  # the target stays under, with the margin
    assert all(len(v) <= capacity for v in holdings.values())
    assert max(after.values()) <= max(before.values()) + 1e-6  # never worse


@settings(max_examples=100, deadline=None)
@given(rate_maps, st.integers(2, 5), st.randoms())
def test_repeated_rebalancing_settles_without_flapping(
    rates: dict[str, float], n_conns: int, rnd: random.Random
) -> None:
    holdings: dict[int, set[str]] = {i: set() for i in range(1, n_conns + 1)}
    for ch in rates:
        holdings[rnd.randint(1, n_conns)].add(ch)
    r = Rebalancer(ceiling=300.0, cooldown_s=10.0, ratio=1.25)
    moved_to: dict[str, list[int]] = {}
    for step in range(200):
        for m in r.plan(conn_loads(holdings, rates), rates, capacity=100, now=step * 10.0):
            holdings[m.source].discard(m.channel)
            holdings[m.target].add(m.channel)
            moved_to.setdefault(m.channel, []).append(m.target)
    # steady rates: it settles; no channel goes back and forth forever
    assert r.plan(conn_loads(holdings, rates), rates, capacity=100, now=1e9) == []
    assert all(len(v) <= n_conns for v in moved_to.values()), moved_to


def test_admit_without_limit_or_under_it_joins_all() -> None:
    wanted = {"a", "b", "c"}
    assert admit(wanted, {}, None).join == wanted
    assert admit(wanted, {}, 3).over_capacity == frozenset()


def test_admit_hottest_first_and_joined_keep_their_place() -> None:
    wanted = {f"c{i}" for i in range(10)}
    rates = {"c5": 50.0, "c7": 70.0, "c1": 10.0}
    a = admit(wanted, rates, 2)
    assert a.join == {"c7", "c5"}
    assert a.over_capacity == wanted - {"c7", "c5"}
    # c9 (rate 100, joined later) appears hot: the joined ones keep their place
    rates["c9"] = 100.0
    a2 = admit(wanted, rates, 2, joined={"c7", "c5"})
    assert a2.join == {"c7", "c5"}
    # with no rates known, the choice is by name, stable
    assert admit(wanted, {}, 3).join == {"c0", "c1", "c2"}


@given(st.sets(st.text("abcxyz", min_size=1, max_size=3), max_size=60), st.integers(0, 70), st.data())
def test_admit_never_exceeds_the_limit_and_partitions_wanted(
    wanted: set[str], limit: int, data: st.DataObject
) -> None:
    joined = data.draw(st.sets(st.sampled_from(sorted(wanted)))) if wanted else set()
    rates = {ch: data.draw(st.floats(0, 100)) for ch in wanted}
    a = admit(wanted, rates, limit, joined)
    assert len(a.join) == min(limit, len(wanted))
    assert a.join | a.over_capacity == wanted and not a.join & a.over_capacity
    if len(joined) <= limit:
        assert joined <= a.join  # no churn


def test_a_hot_connection_blocked_by_full_ones_asks_for_a_connection() -> None:
    rates = {"hot": 100.0, "h2": 100.0, "a": 1.0, "b": 1.0}
    loads = conn_loads({1: {"hot", "h2"}, 2: {"a", "b"}}, rates)
    stuck: list[int] = []
    assert pick_moves(loads, rates, capacity=2, ceiling=150.0, ratio=0.0, now=0.0, stuck=stuck) == []
    assert stuck == [1]
    r = Rebalancer(ceiling=150.0, ratio=0.0)
    assert r.plan(loads, rates, capacity=2, now=0.0) == [] and r.needs_connection
    spare = conn_loads({1: {"hot", "h2"}, 2: {"a", "b"}, 3: set()}, rates)
    moves = r.plan(spare, rates, capacity=2, now=1.0)
    assert [(m.source, m.target) for m in moves] == [(1, 3)] and not r.needs_connection


def test_every_connection_above_the_ceiling_asks_for_a_connection_but_the_ratio_alone_does_not() -> None:
    rates = {"a": 100.0, "b": 100.0, "c": 100.0, "d": 100.0}
    loads = conn_loads({1: {"a", "b"}, 2: {"c", "d"}}, rates)  # 200 each, ceiling 150
    stuck: list[int] = []
    assert pick_moves(loads, rates, capacity=90, ceiling=150.0, now=0.0, stuck=stuck) == []
    assert stuck == [1, 2]
    rates = {"a": 100.0, "b": 100.0, "c": 10.0, "d": 10.0}
    loads = conn_loads({1: {"a", "b"}, 2: {"c", "d"}}, rates)  # above 1.25 x mean, below the ceiling
    stuck = []
    moves = pick_moves(loads, rates, capacity=2, ceiling=1000.0, now=0.0, stuck=stuck)
    assert moves == [] and stuck == []  # conn 2 is full: no move, and no new connection either
