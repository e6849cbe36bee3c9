"""The monitor's pure evaluation of the heartbeats, its JSON and its Prometheus export (no Kafka)."""

from __future__ import annotations

from prometheus_client import generate_latest

from chatlog.monitor.heartbeats import Channel, evaluate, report_json
from chatlog.monitor.metrics import MonitorMetrics
from chatlog.monitor.preflight import broker_url
from chatlog.monitor.settings import MonitorSettings
from ingest.status import STOPPED, Heartbeat

NOW = 1_800_000_000_000


def hb(worker: str, replica: int, confirmed: list[str], *, age_s: float = 1.0, **kw: object) -> Heartbeat:
    return Heartbeat(
        worker_id=worker,
        replica=replica,
        host="h",
        pid=1,
        started_at=NOW - 3_600_000,
        sent_at=NOW - int(age_s * 1000),
        confirmed=confirmed,
        **kw,  # type: ignore[arg-type]
    )


def registry(*logins: str, bucket: int = 0, added_at: int = 0) -> dict[str, Channel]:
    return {login: Channel(login, bucket, added_at) for login in logins}


def test_fresh_heartbeats_cover_everything() -> None:
    channels = registry("a", "b", "c")
    beats = [hb("w1", 0, ["a", "b"], buckets=[0]), hb("w2", 0, ["c"], buckets=[1])]
    report = evaluate(channels, beats, now_ms=NOW, stale_s=10)
    [r0] = report.replicas
    assert report.ok
    assert (r0.registered, r0.confirmed, r0.live_workers) == (3, 3, 2)
    assert r0.owners == {"w1": [0], "w2": [1]}
    assert r0.uncovered == [] and report.since == {}
    assert r0.longest_uncovered_s(NOW) == 0.0


def test_stale_heartbeat_is_a_dead_worker_and_its_channels_are_uncovered_since_its_last_beat() -> None:
    channels = registry("a", "b", "c", bucket=3)
    beats = [hb("live", 0, ["a"], buckets=[1]), hb("dead", 0, ["b", "c"], age_s=30, buckets=[3])]
    report = evaluate(channels, beats, now_ms=NOW, stale_s=10)
    [r0] = report.replicas
    assert [u.channel for u in r0.uncovered] == ["b", "c"]
    assert {u.since_ms for u in r0.uncovered} == {NOW - 30_000}
    assert r0.live_workers == 1
    assert [(d.worker_id, d.last_seen_ms) for d in r0.dead_workers] == [("dead", NOW - 30_000)]
    assert r0.unowned_buckets == [3]  # the dead worker's bucket has no live owner
    assert r0.longest_uncovered_s(NOW) == 30.0
    assert report.since == {(0, "b"): NOW - 30_000, (0, "c"): NOW - 30_000}


def test_a_stopped_worker_is_dead_even_when_its_heartbeat_is_fresh() -> None:
    report = evaluate(registry("a"), [hb("w", 0, ["a"], state=STOPPED)], now_ms=NOW, stale_s=10)
    [r0] = report.replicas
    assert [u.channel for u in r0.uncovered] == ["a"]
    assert r0.live_workers == 0
    assert [d.state for d in r0.dead_workers] == [STOPPED]


def test_without_evidence_a_channel_is_uncovered_since_now_and_the_time_is_kept_afterwards() -> None:
    channels = registry("a")
    first = evaluate(channels, [], now_ms=NOW, stale_s=10)
    assert first.since == {(0, "a"): NOW}
    later = evaluate(channels, [], now_ms=NOW + 7_000, stale_s=10, previous_since=first.since)
    assert later.replicas[0].uncovered[0].since_ms == NOW
    assert later.replicas[0].longest_uncovered_s(NOW + 7_000) == 7.0


def test_a_channel_covered_again_is_forgotten_and_a_new_loss_counts_from_then() -> None:
    channels = registry("a")
    lost = evaluate(channels, [], now_ms=NOW, stale_s=10)
    back = evaluate(
        channels, [hb("w", 0, ["a"], age_s=0)], now_ms=NOW + 1000, stale_s=10, previous_since=lost.since
    )
    assert back.ok and back.since == {}
    again = evaluate(channels, [], now_ms=NOW + 5000, stale_s=10, previous_since=back.since)
    assert again.since == {(0, "a"): NOW + 5000}


def test_a_channel_added_after_the_dead_worker_confirmed_it_counts_from_when_it_was_added() -> None:
    channels = registry("a", added_at=NOW - 5_000)  # removed and added again after the worker died
    report = evaluate(channels, [hb("dead", 0, ["a"], age_s=60)], now_ms=NOW, stale_s=10)
    assert report.replicas[0].uncovered[0].since_ms == NOW - 5_000


def test_replicas_requested_and_seen_are_all_reported() -> None:
    channels = registry("a", "b")
    beats = [hb("w", 2, ["a", "b"])]
    report = evaluate(channels, beats, now_ms=NOW, stale_s=10, replicas=range(2))
    assert [r.replica for r in report.replicas] == [0, 1, 2]
    assert [len(r.uncovered) for r in report.replicas] == [2, 2, 0]
    assert not report.ok


def test_heartbeats_past_the_forget_bound_are_ignored_entirely() -> None:
    beats = [hb("ancient", 1, ["a"], age_s=7200)]
    report = evaluate(registry("a"), beats, now_ms=NOW, stale_s=10, forget_s=3600, replicas=[0])
    assert [r.replica for r in report.replicas] == [0]  # replica 1 is only known from the forgotten beat
    assert report.replicas[0].dead_workers == []
    assert report.replicas[0].uncovered[0].since_ms == NOW  # a forgotten beat is no evidence either


def test_joined_but_unregistered_channels_are_counted_not_reported_uncovered() -> None:
    report = evaluate(registry("a"), [hb("w", 0, ["a", "gone"])], now_ms=NOW, stale_s=10)
    assert report.ok
    assert report.replicas[0].unregistered_joined == 1


def test_an_empty_registry_is_covered() -> None:
    report = evaluate({}, [hb("w", 0, [])], now_ms=NOW, stale_s=10)
    assert report.ok and report.registered == 0 and report.replicas[0].live_workers == 1


def test_uncovered_are_listed_longest_first_and_the_json_limit_applies() -> None:
    channels = registry("a", "b", "c")
    previous = {(0, "c"): NOW - 9_000, (0, "a"): NOW - 1_000}
    report = evaluate(channels, [], now_ms=NOW, stale_s=10, previous_since=previous)
    assert [u.channel for u in report.replicas[0].uncovered] == ["c", "a", "b"]
    body = report_json(report, limit=2, ready=True)
    replicas = body["replicas"]
    assert isinstance(replicas, list) and len(replicas) == 1
    r0 = replicas[0]
    assert r0["uncovered_count"] == 3
    assert r0["longest_uncovered_s"] == 9.0
    assert r0["uncovered"] == [
        {"channel": "c", "bucket": 0, "since": NOW - 9_000, "seconds": 9.0},
        {"channel": "a", "bucket": 0, "since": NOW - 1_000, "seconds": 1.0},
    ]
    assert body["ok"] is False and body["ready"] is True and body["registered"] == 3


def _sample(metrics: MonitorMetrics, line_start: str) -> float | None:
    for line in generate_latest(metrics.registry).decode().splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_gauges_follow_the_report_and_vanish_with_a_forgotten_replica() -> None:
    metrics = MonitorMetrics()
    channels = registry("a", "b")
    beats = [hb("w", 0, ["a"]), hb("old", 1, ["a", "b"], age_s=20)]
    metrics.export(evaluate(channels, beats, now_ms=NOW, stale_s=10))
    assert _sample(metrics, 'chatlog_monitor_uncovered_channels{replica="0"}') == 1
    assert _sample(metrics, 'chatlog_monitor_uncovered_channels{replica="1"}') == 2
    assert _sample(metrics, 'chatlog_monitor_live_workers{replica="0"}') == 1
    assert _sample(metrics, 'chatlog_monitor_longest_uncovered_seconds{replica="1"}') == 20.0
    assert _sample(metrics, "chatlog_monitor_registered_channels ") == 2
    metrics.export(evaluate(channels, [hb("w", 0, ["a", "b"])], now_ms=NOW, stale_s=10))
    assert _sample(metrics, 'chatlog_monitor_uncovered_channels{replica="0"}') == 0
    assert _sample(metrics, 'chatlog_monitor_uncovered_channels{replica="1"}') is None


def test_settings_and_broker_url() -> None:
    settings = MonitorSettings.model_validate({"kafka_bootstrap_servers": "k1:9092, k2:9093"})
    assert broker_url(settings) == "kafka://k1:9092;k2:9093"
    assert (settings.monitor_web_port, settings.monitor_metrics_port) == (6066, 9102)
