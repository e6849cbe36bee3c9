"""Coverage events of one ingester, and reading other workers' confirmations (pure logic)."""

from __future__ import annotations

import msgspec
import pytest

from ingest.coverage import CoverageTracker, confirmations
from schemas.coverage import CoverageEvent, decode, encode


def test_joins_and_leaves_with_the_reason_each_channel_stopped() -> None:
    t = CoverageTracker(0, "a", 7)
    first = t.update({"x", "y", "z"}, {"x", "y", "z"}, 100)
    assert [(e.channel, e.state) for e in first] == [("x", "joined"), ("y", "joined"), ("z", "joined")]
    assert t.update({"x", "y", "z"}, {"x", "y", "z"}, 150) == []
    later = t.update({"x"}, {"x", "y"}, 200, handed_off={"z"})
    assert [(e.channel, e.state, e.reason) for e in later] == [
        ("y", "left", "lost"),
        ("z", "left", "handed-off"),
    ]
    assert [(e.channel, e.reason) for e in t.update(set(), set(), 300)] == [("x", "parted")]
    assert all(e.session == 7 and e.worker == "a" and e.replica == 0 for e in first + later)


def test_a_channel_released_before_the_pool_parts_it_still_leaves_as_handed_off() -> None:
    """The confirmation that releases a channel can reach the worker a poll before the pool stops
    wanting it; the label waits for the channel's LEFT, unless its bucket comes back meanwhile."""
    t = CoverageTracker(0, "a", 7)
    t.update({"x", "y", "z"}, {"x", "y", "z"}, 100)
    assert t.update({"x", "y", "z"}, {"x", "y", "z"}, 150, handed_off={"y", "z"}) == []  # still wanted
    assert t.update({"x", "y", "z"}, {"x"}, 160) == []  # unwanted now, not parted yet
    assert t.update({"x", "y", "z"}, {"x", "z"}, 170) == []  # z's bucket came back: wanted again
    later = t.update({"x"}, {"x"}, 200)
    assert [(e.channel, e.reason) for e in later] == [("y", "handed-off"), ("z", "parted")]
    t.update({"x", "y"}, {"x", "y"}, 300)
    assert [(e.channel, e.reason) for e in t.update({"x"}, {"x"}, 400)] == [("y", "parted")]  # forgotten


def test_refresh_and_stop_cover_every_channel_once() -> None:
    t = CoverageTracker(1, "b", 1)
    t.update({"x", "y"}, {"x", "y"}, 0)
    assert [(e.channel, e.reason) for e in t.refresh(10)] == [("x", "refresh"), ("y", "refresh")]
    assert [(e.channel, e.state) for e in t.stop_all(20, "stopped")] == [("x", "left"), ("y", "left")]
    assert t.covered == set()
    assert t.alive(30).key == "1/~alive/b"


def test_only_other_workers_of_the_same_replica_confirm() -> None:
    def e(replica: int, worker: str, state: str, channel: str) -> CoverageEvent:
        return CoverageEvent(replica=replica, worker=worker, session=1, state=state, at=1, channel=channel)  # type: ignore[arg-type]

    joined, left = confirmations(
        [e(0, "b", "joined", "x"), e(1, "c", "joined", "y"), e(0, "a", "joined", "z"),
         e(0, "b", "joined", "w"), e(0, "b", "left", "w"), e(0, "b", "alive", "")],
        replica=0,
        worker="a",
    )  # fmt: skip
    assert (joined, left) == ({"x"}, {"w"})


def test_the_contract_round_trips_and_bounds_its_fields() -> None:
    event = CoverageEvent(replica=0, worker="a", session=1, state="joined", at=5, channel="x")
    assert decode(encode(event)) == event
    assert event.key == "0/x/a"
    with pytest.raises(msgspec.ValidationError):
        decode(encode(event).replace(b'"joined"', b'"maybe"'))
    with pytest.raises(msgspec.ValidationError):
        decode(encode(event).replace(b'"x"', b'"' + b"x" * 300 + b'"'))


def test_records_are_decoded_skipping_tombstones_and_counting_the_bad() -> None:
    from dataclasses import dataclass

    from schemas.coverage import decode_records

    @dataclass
    class Record:
        raw: bytes | None
        err: object = None

        def value(self) -> bytes | None:
            return self.raw

        def error(self) -> object:
            return self.err

    good = CoverageEvent(replica=1, worker="w", session=2, state="left", at=3, channel="c", reason="lost")
    events, bad = decode_records([Record(encode(good)), Record(None), Record(b"{"), Record(b"x", "error")])
    assert (events, bad) == ([good], 1)
