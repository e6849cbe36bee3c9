"""Reconcile with rates (load-aware joins) and ``keep`` (the target of a move keeps a duplicate)."""

from __future__ import annotations

from ingest.irc.reconcile import ConnState, ConnView, plan

READY, CONNECTING = ConnState.READY, ConnState.CONNECTING


def test_hot_channels_are_joined_first_on_the_least_loaded_connection() -> None:
    conns = [
        ConnView(1, READY, joined={"busy"}),
        ConnView(2, READY, joined={"quiet1", "quiet2"}),
        ConnView(3, READY),
    ]
    rates = {"busy": 400.0, "quiet1": 1.0, "quiet2": 1.0, "h1": 300.0, "h2": 200.0, "h3": 5.0}
    wanted = {"busy", "quiet1", "quiet2", "h1", "h2", "h3"}
    p = plan(wanted, conns, capacity=10, join_budget=100, rates=rates)
    # h1 (hottest) -> conn 3 (rate 0); h2 -> conn 2 (rate 2); h3 -> conn 1? no: conn 2 (202) vs
    # conn 3 (300) vs conn 1 (400): conn 2
    assert p.joins == [(3, "h1"), (2, "h2"), (2, "h3")]


def test_without_rates_known_joins_spread_by_count() -> None:
    conns = [ConnView(1, READY, joined={"a", "b"}), ConnView(2, READY)]
    p = plan({"a", "b", "x", "y", "z"}, conns, capacity=10, join_budget=100, rates={})
    assert sorted(p.joins) == [(1, "z"), (2, "x"), (2, "y")]


def test_ready_connections_are_used_before_connecting_ones() -> None:
    conns = [ConnView(1, READY, joined={"a"}), ConnView(2, CONNECTING)]
    p = plan({"a", "b"}, conns, capacity=10, join_budget=100, rates={"a": 100.0})
    assert p.joins == [(1, "b")]


def test_capacity_still_bounds_load_aware_joins() -> None:
    conns = [ConnView(1, READY, joined={"a"})]
    p = plan({"a", "b", "c"}, conns, capacity=2, join_budget=100, rates={"a": 1.0})
    assert len(p.joins) == 1 and p.open == 1


def test_a_move_target_keeps_the_duplicate_whatever_its_id() -> None:
    # the channel moves from conn 1 to conn 2: both joined now, conn 1 parts it
    conns = [ConnView(1, READY, joined={"hot", "x"}), ConnView(2, READY, joined={"hot"})]
    p = plan({"hot", "x"}, conns, capacity=10, join_budget=100, keep={"hot": 2})
    assert p.parts == [(1, "hot")]
    # without keep, the lowest id keeps it
    p = plan({"hot", "x"}, conns, capacity=10, join_budget=100)
    assert p.parts == [(2, "hot")]


def test_a_move_in_flight_is_neither_parted_nor_joined_again() -> None:
    conns = [ConnView(1, READY, joined={"hot"}), ConnView(2, READY, pending={"hot"})]
    p = plan({"hot"}, conns, capacity=10, join_budget=100, keep={"hot": 2}, rates={"hot": 9.0})
    assert p.parts == [] and p.joins == []


def test_a_spare_connection_is_opened_and_kept_idle_for_moves() -> None:
    conns = [ConnView(1, READY, joined={"a"})]
    assert plan({"a"}, conns, capacity=10, join_budget=10, spare=1).open == 1
    conns = [ConnView(1, READY, joined={"a"}), ConnView(2, READY), ConnView(3, CONNECTING)]
    p = plan({"a"}, conns, capacity=10, join_budget=10, spare=1)
    assert p.open == 0 and p.close == [3]
    assert plan({"a"}, conns, capacity=10, join_budget=10).close == [2, 3]


def test_both_assignments_count_new_connections_and_the_budget_alike() -> None:
    # 5 free places on conn 1, then 25 channels without a slot: 3 new connections of 10
    conns = [ConnView(1, READY, joined={f"old{i}" for i in range(5)})]
    wanted = {f"old{i}" for i in range(5)} | {f"new{i:02}" for i in range(30)}
    by_count = plan(wanted, conns, capacity=10, join_budget=3)
    by_load = plan(wanted, conns, capacity=10, join_budget=3, rates={})
    for p in (by_count, by_load):
        assert p.open == 3
        assert len(p.joins) == 3 and {cid for cid, _ch in p.joins} == {1}
