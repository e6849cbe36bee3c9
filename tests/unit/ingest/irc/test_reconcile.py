"""Reconcile as pure functions: wanted vs. per-connection state → JOIN / PART / open / close."""

from __future__ import annotations

from ingest.irc.reconcile import ConnState, ConnView, PendingJoin, join_timeouts, plan

READY, CONNECTING, DRAINING = ConnState.READY, ConnState.CONNECTING, ConnState.DRAINING


def chans(n: int, prefix: str = "c") -> set[str]:
    return {f"{prefix}{i:03d}" for i in range(n)}


def test_empty_pool_opens_enough_connections_for_capacity() -> None:
    p = plan(chans(250), [], capacity=90, join_budget=1000)
    assert p.open == 3
    assert p.joins == []  # nothing is READY yet
    assert p.homeless == 250


def test_joins_fill_ready_connections_up_to_capacity_and_open_for_the_rest() -> None:
    conns = [ConnView(1, READY, joined=chans(80)), ConnView(2, READY)]
    p = plan(chans(80) | chans(50, "n"), conns, capacity=90, join_budget=1000)
    per_conn = {cid: sum(1 for c, _ in p.joins if c == cid) for cid in (1, 2)}
    assert per_conn == {1: 10, 2: 40}
    assert p.open == 0
    assert {ch for _, ch in p.joins} == chans(50, "n")


def test_never_joins_a_channel_joined_or_pending_on_a_ready_connection() -> None:
    conns = [
        ConnView(1, READY, joined={"a", "b"}, pending={"c"}),
        ConnView(2, READY, joined={"d"}),
    ]
    p = plan({"a", "b", "c", "d", "e"}, conns, capacity=90, join_budget=100)
    assert p.joins == [(1, "e")]
    assert p.parts == []


def test_join_budget_limits_joins_but_not_the_connections_needed() -> None:
    conns = [ConnView(1, READY)]
    p = plan(chans(100), conns, capacity=10, join_budget=3, horizon=20)
    assert len(p.joins) == 3
    assert p.open == 1  # 20 channels within the horizon: 10 fit on conn 1, 10 need another


def test_horizon_bounds_how_many_connections_open_at_once() -> None:
    p = plan(chans(10_000), [], capacity=90, join_budget=20, horizon=20)
    assert p.open == 1


def test_connecting_connections_count_as_capacity_so_nothing_opens_twice() -> None:
    conns = [ConnView(1, CONNECTING), ConnView(2, CONNECTING)]
    p = plan(chans(150), conns, capacity=90, join_budget=1000)
    assert p.open == 0
    assert p.close == []


def test_unwanted_channels_are_parted_and_parting_ones_not_again() -> None:
    conns = [ConnView(1, READY, joined={"a", "b", "c"}, parting={"c"})]
    p = plan({"a"}, conns, capacity=90, join_budget=10)
    assert p.parts == [(1, "b")]


def test_duplicate_join_is_parted_on_the_higher_connection() -> None:
    conns = [ConnView(1, READY, joined={"a"}), ConnView(2, READY, joined={"a", "b"})]
    p = plan({"a", "b"}, conns, capacity=90, join_budget=10)
    assert p.parts == [(2, "a")]
    assert p.joins == []


def test_channels_on_a_draining_connection_are_joined_elsewhere_first() -> None:
    draining = ConnView(1, DRAINING, joined={"old1", "old2"})
    fresh = ConnView(2, READY)
    p = plan({"old1", "old2", "new"}, [draining, fresh], capacity=90, join_budget=2)
    assert p.joins == [(2, "old1"), (2, "old2")]  # moving channels go before brand-new ones
    assert p.parts == []
    assert p.close == []  # not before its channels are confirmed elsewhere


def test_draining_connection_closes_once_its_wanted_channels_are_confirmed_elsewhere() -> None:
    draining = ConnView(1, DRAINING, joined={"a", "b", "gone"})
    half = ConnView(2, READY, joined={"a"}, pending={"b"})
    assert plan({"a", "b"}, [draining, half], capacity=90, join_budget=10).close == []
    done = ConnView(2, READY, joined={"a", "b"})
    assert plan({"a", "b"}, [draining, done], capacity=90, join_budget=10).close == [1]


def test_draining_connection_needs_a_new_connection_when_others_are_full() -> None:
    draining = ConnView(1, DRAINING, joined=chans(90))
    p = plan(chans(90), [draining], capacity=90, join_budget=20, horizon=20)
    assert p.open == 1
    assert p.joins == []


def test_moved_channel_only_goes_to_a_fresh_connection() -> None:
    conns = [ConnView(1, READY), ConnView(2, READY)]
    p = plan({"stuck", "x"}, conns, capacity=90, join_budget=10, fresh_after={"stuck": 3})
    assert p.joins == [(1, "x")]
    assert p.open == 1
    conns.append(ConnView(3, READY))
    p = plan({"stuck", "x"}, conns, capacity=90, join_budget=10, fresh_after={"stuck": 3})
    assert (3, "stuck") in p.joins


def test_blocked_channels_are_left_alone() -> None:
    p = plan({"a", "b"}, [ConnView(1, READY)], capacity=90, join_budget=10, blocked={"b"})
    assert p.joins == [(1, "a")]
    assert p.homeless == 1


def test_idle_connections_close_only_when_every_wanted_channel_is_covered() -> None:
    conns = [ConnView(1, READY, joined={"a"}), ConnView(2, READY), ConnView(3, CONNECTING)]
    assert plan({"a"}, conns, capacity=90, join_budget=10).close == [2, 3]
    busy = plan({"a", "b"}, conns, capacity=90, join_budget=0)  # "b" waits for the budget
    assert busy.close == []


def test_max_open_caps_new_connections() -> None:
    assert plan(chans(500), [], capacity=10, join_budget=500, max_open=2).open == 2
    assert plan(chans(500), [], capacity=10, join_budget=500, max_open=0).open == 0


def test_plan_is_deterministic() -> None:
    conns = [ConnView(1, READY, joined=chans(5)), ConnView(2, READY)]
    wanted = chans(40) | chans(40, "z")
    first = plan(wanted, conns, capacity=30, join_budget=50)
    assert first == plan(
        set(sorted(wanted, reverse=True)), list(reversed(conns)), capacity=30, join_budget=50
    )


def test_join_watchdog_retries_then_moves() -> None:
    pending = {
        1: {"fresh": PendingJoin(99.0, 1), "late": PendingJoin(80.0, 1), "again": PendingJoin(80.0, 2)},
        2: {"gaveup": PendingJoin(80.0, 3)},
    }
    retry, move = join_timeouts(pending, 100.0, timeout=10.0, retries=2)
    assert sorted(retry) == [(1, "again"), (1, "late")]
    assert move == [(2, "gaveup")]


def test_join_watchdog_with_no_retries_moves_at_once() -> None:
    retry, move = join_timeouts({1: {"a": PendingJoin(0.0, 1)}}, 10.0, timeout=10.0, retries=0)
    assert retry == []
    assert move == [(1, "a")]
