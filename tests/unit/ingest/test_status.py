"""Heartbeat encoding, staleness and the per-replica view from heartbeats (pure)."""

from __future__ import annotations

import json

from ingest.status import (
    STOPPED,
    Heartbeat,
    decode_heartbeat,
    encode_heartbeat,
    fresh,
    heartbeat_view,
    report_json,
    report_text,
    status_key,
)


def _hb(
    worker: str, replica: int, confirmed: list[str], buckets: list[int], sent_at: int = 10_000
) -> Heartbeat:
    return Heartbeat(
        worker_id=worker, replica=replica, host="h", pid=1, started_at=0, sent_at=sent_at,
        buckets=buckets, confirmed=confirmed, rates={"events": 5.0},
    )  # fmt: skip


def test_heartbeat_round_trip_and_garbage() -> None:
    hb = _hb("w1", 0, ["a", "b"], [1, 2])
    assert decode_heartbeat(encode_heartbeat(hb)) == hb
    assert decode_heartbeat(b"{nope") is None
    assert decode_heartbeat(b'{"worker_id": 3}') is None
    assert status_key(1, "w1") == "r1/w1"


def test_fresh_drops_stale_and_stopped() -> None:
    beats = [
        _hb("new", 0, [], [], sent_at=95_000),
        _hb("old", 0, [], [], sent_at=80_000),
        Heartbeat(worker_id="gone", replica=0, host="h", pid=1, started_at=0, sent_at=99_000, state=STOPPED),
    ]
    assert [hb.worker_id for hb in fresh(beats, now_ms=100_000, stale_s=10)] == ["new"]


def test_heartbeat_view_per_replica_with_owners_and_uncovered() -> None:
    registered = {"a", "b", "c", "d"}
    beats = [
        _hb("w1", 0, ["a", "b"], [0, 1]),
        _hb("w2", 0, ["c", "d", "zombie"], [2]),
        _hb("w3", 1, ["a"], [0, 1, 2]),
    ]
    r0, r1 = heartbeat_view(registered, beats)
    assert (r0.replica, r0.confirmed, r0.uncovered, r0.ok) == (0, 4, [], True)
    assert r0.owners == {"w1": [0, 1], "w2": [2]}
    assert r0.unregistered_joined == 1
    assert (r1.replica, r1.confirmed, r1.uncovered, r1.ok) == (1, 1, ["b", "c", "d"], False)
    assert r1.events_per_s == 5.0


def test_an_expected_replica_without_workers_covers_nothing() -> None:
    [r0, r1] = heartbeat_view({"a"}, [_hb("w1", 0, ["a"], [0])], replicas=range(2))
    assert r0.ok and not r1.ok and r1.uncovered == ["a"] and r1.owners == {}


def test_no_heartbeats_at_all_means_replica_zero_uncovered() -> None:
    [r0] = heartbeat_view({"a", "b"}, [])
    assert r0.replica == 0 and r0.uncovered == ["a", "b"]
    [empty] = heartbeat_view(set(), [])
    assert empty.ok


def test_reports_show_first_twenty_and_count() -> None:
    registered = {f"ch{i:03}" for i in range(25)}
    report = heartbeat_view(registered, [_hb("w1", 0, [], [0, 1, 2, 5])])
    text = report_text(report)
    assert "0/25 channels confirmed, 25 UNCOVERED" in text
    assert "w1: 4 bucket(s) [0-2,5]" in text
    assert "ch019" in text and "ch020" not in text and "and 5 more" in text
    doc = json.loads(json.dumps(report_json(report, limit=3)))
    assert doc["ok"] is False
    assert doc["replicas"][0]["uncovered_count"] == 25 and len(doc["replicas"][0]["uncovered"]) == 3
