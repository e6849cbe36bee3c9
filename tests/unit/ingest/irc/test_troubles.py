"""Bookkeeping of channels whose JOIN went wrong (moved to a fresh connection, or in backoff)."""

from __future__ import annotations

from core.testing import FakeClock
from ingest.irc.troubles import JoinTroubles


def test_a_channel_moves_once_then_is_blocked_with_doubling_backoff() -> None:
    clock = FakeClock()
    t = JoinTroubles(60.0, clock, max_backoff_s=200.0)
    assert t.move("a", 5)
    assert t.fresh_after == {"a": 5}
    assert not t.move("a", 9)  # timed out on the fresh connection too
    assert t.fresh_after == {} and t.blocked == {"a": 60.0}
    assert t.block("a") == 120.0
    assert t.block("a") == 200.0  # capped


def test_settle_forgets_confirmed_and_unwanted_and_releases_expired_blocks() -> None:
    clock = FakeClock()
    t = JoinTroubles(10.0, clock)
    t.move("ok", 2)
    t.move("gone", 2)
    t.block("later")
    assert not t.settle({"ok", "later"}, lambda: {"ok"})
    assert t.fresh_after == {} and set(t.blocked) == {"later"}
    clock.now = 10.0
    assert t.settle({"ok", "later"}, frozenset)
    assert t.blocked == {}
    assert t.failures == {"later": 1}  # still counts until it is confirmed
    t.settle({"later"}, lambda: {"later"})
    assert not t
