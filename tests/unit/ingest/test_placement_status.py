"""Worker capacity in heartbeats and in the ``chatlog status`` report."""

from __future__ import annotations

from ingest.status import (
    Heartbeat,
    decode_heartbeat,
    encode_heartbeat,
    heartbeat_view,
    report_json,
    report_text,
)


def _hb(worker: str, confirmed: list[str], over: list[str], cap: int | None) -> Heartbeat:
    return Heartbeat(
        worker_id=worker, replica=0, host="h", pid=1, started_at=0, sent_at=1, buckets=[0],
        confirmed=confirmed, over_capacity=over, max_channels=cap,
    )  # fmt: skip


def test_over_capacity_round_trips_and_is_reported_per_worker() -> None:
    full = _hb("w1", ["a", "b"], ["c", "d"], 2)
    assert decode_heartbeat(encode_heartbeat(full)) == full
    old = decode_heartbeat(b'{"worker_id":"w0","replica":0,"host":"h","pid":1,"started_at":0,"sent_at":1}')
    assert old is not None and old.over_capacity == [] and old.max_channels is None  # older workers
    [r] = heartbeat_view({"a", "b", "c", "d", "e"}, [full, _hb("w2", ["e"], [], None)])
    assert r.over_capacity == {"w1": 2} and r.capacity == {"w1": 2}
    assert r.uncovered == ["c", "d"]
    j = report_json([r])
    assert j["replicas"][0]["over_capacity_count"] == 2  # type: ignore[index]
    text = report_text([r])
    assert "w1: 1 bucket(s) [0], capacity 2, 2 OVER CAPACITY" in text
    assert "over capacity: 2 channel(s) not joined by their owner" in text
    assert "OVER" not in text.split("w2:")[1].split("\n")[0]
