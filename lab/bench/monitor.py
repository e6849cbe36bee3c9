"""``chatlog bench monitor``: how fast the faust monitor folds the registry and heartbeats, and evaluates.

Also ``python -m lab.bench.monitor`` (defaults).

On throw-away topics (deleted afterwards, with the monitor's changelog topics and group):

1. ``channels`` registry records are produced as `chatlog channels add` writes them (lz4, murmur2);
2. the monitor starts (``python -m chatlog monitor``) and folds them: channel records/s;
3. ``workers`` x ``beats`` heartbeats are produced in the real format by the ingester's producer (zstd),
   each worker confirming its share of the channels: heartbeats/s (and MB/s) folded;
4. once everything is folded, the duration of one coverage evaluation and the monitor's RSS.

Rates come from the monitor's own counter ``chatlog_monitor_records_total``, sampled every 0.2 s.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from core.errors import ChatlogError
from core.settings import KafkaSettings
from core.times import now_ms
from ingest import status
from ingest.producer import IngestProducer
from ingest.registry import PARTITIONER, encode_record
from ingest.settings import IngestSettings
from lab.bench.scratch import scratch_topics
from lab.results import RESULTS_DIR, write_json
from lab.scrape import Scrape, scrape


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _folded(sample: Scrape, topic: str) -> float:
    return sample.value("chatlog_monitor_records_total", outcome="folded", topic=topic) or 0.0


def _or_nan(value: float | None) -> float:
    return float("nan") if value is None else value


def _rate_until(
    port: int,
    proc: subprocess.Popen[bytes],
    done: Callable[[Scrape], bool],
    topic: str,
    timeout: float,
) -> tuple[float, Scrape]:
    """Records/s of ``topic`` between the first and the last change of its counter, until ``done``."""
    deadline = time.monotonic() + timeout
    first: tuple[float, float] | None = None
    last = (0.0, 0.0)
    sample = Scrape(())
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ChatlogError(f"the monitor exited with {proc.returncode}")
        answer = scrape(port, timeout=5)
        if answer is not None:
            sample = answer
            now, count = time.monotonic(), _folded(sample, topic)
            if first is None and count > 0:
                first = (now, count)
            if count != last[1]:
                last = (now, count)
            if done(sample):
                break
        time.sleep(0.2)
    else:
        last_sample = {k: v for k, v in sample.totals().items() if k.startswith("chatlog_monitor_")}
        raise ChatlogError(
            f"bench monitor: {topic} not folded within {timeout:.0f}s (last sample {last_sample})"
        )
    if first is None or last[0] <= first[0]:
        return float("nan"), sample
    return (last[1] - first[1]) / (last[0] - first[0]), sample


def run(
    settings: KafkaSettings,
    *,
    channels: int = 100_000,
    workers: int = 100,
    beats: int = 20,
    out_dir: Path | None = None,
    timeout: float = 300.0,
) -> dict[str, Any]:
    uid = uuid.uuid4().hex[:8]
    app_id = f"bench{uid}-monitor"
    log = Path(tempfile.gettempdir()) / f"{app_id}.log"
    # the monitor's changelog topics and its consumer group go with the scratch topics
    with scratch_topics(settings, f"bench{uid}", also=(f"{app_id}-",), groups=(app_id,)) as s:
        result = _measure(s, app_id, log, channels=channels, workers=workers, beats=beats, timeout=timeout)
    target = write_json((out_dir or RESULTS_DIR) / "monitor.json", result)
    result["written_to"] = str(target)
    return result


def _measure(
    s: KafkaSettings, app_id: str, log: Path, *, channels: int, workers: int, beats: int, timeout: float
) -> dict[str, Any]:
    proc: subprocess.Popen[bytes] | None = None
    try:
        logins = [f"bench_{i:06d}" for i in range(channels)]
        registry = Producer(
            {
                **s.kafka_client_config(),
                "partitioner": PARTITIONER,
                "compression.type": "lz4",
                "linger.ms": 20,
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        added = now_ms()
        for login in logins:
            registry.produce(s.topic_channels, encode_record(login, added), login)
            registry.poll(0)
        if registry.flush(60):
            raise ChatlogError("bench monitor: registry records not acknowledged")

        metrics_port = _free_port()
        env = {
            **os.environ,
            **{
                f"CHATLOG_{k.upper()}": str(v)
                for k, v in {
                    "kafka_bootstrap_servers": s.kafka_bootstrap_servers,
                    "topic_channels": s.topic_channels,
                    "topic_status": s.topic_status,
                    "monitor_app_id": app_id,
                    "monitor_web_port": _free_port(),
                    "monitor_web_bind": "127.0.0.1",
                    "monitor_metrics_port": metrics_port,
                    "monitor_metrics_host": "127.0.0.1",
                    "monitor_stale_s": 3600,
                    "monitor_interval_s": 2,
                }.items()
            },
        }
        started = time.monotonic()
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "chatlog", "monitor"], env=env, stdout=out, stderr=out
            )
        channel_rate, sample = _rate_until(
            metrics_port, proc, lambda m: _folded(m, "channels") >= channels, "channels", timeout
        )
        registry_folded_s = time.monotonic() - started

        ingest_settings = IngestSettings.model_validate(
            {
                "kafka_bootstrap_servers": s.kafka_bootstrap_servers,
                "topic_messages": s.topic_messages,
                "topic_deadletter": s.topic_deadletter,
                "topic_status": s.topic_status,
            }
        )
        producer = IngestProducer(ingest_settings, "bench")
        share = max(1, channels // workers)
        payload = 0
        for b in range(beats):
            for w in range(workers):
                hb = status.Heartbeat(
                    worker_id=f"w{w}",
                    replica=0,
                    host="bench",
                    pid=w,
                    started_at=added,
                    sent_at=now_ms(),
                    buckets=[w % s.channel_buckets],
                    confirmed=logins[w * share : (w + 1) * share],
                    rates={"events": float(b)},
                )
                value = status.encode_heartbeat(hb)
                payload += len(value)
                producer.produce_status(status.status_key(0, hb.worker_id), value)
                producer.poll(0)
        if producer.flush(60):
            raise ChatlogError("bench monitor: heartbeats not acknowledged")
        total = workers * beats
        beat_rate, sample = _rate_until(
            metrics_port, proc, lambda m: _folded(m, "heartbeats") >= total, "heartbeats", timeout
        )
        time.sleep(2.5)  # one more evaluation over the complete tables
        sample = scrape(metrics_port, timeout=5) or sample
        rss_kb = next(
            int(line.split()[1])
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
            if line.startswith("VmRSS:")
        )
        result: dict[str, Any] = {
            "channels": channels,
            "workers": workers,
            "heartbeats": total,
            "heartbeat_bytes_avg": round(payload / total),
            "channel_records_folded_per_s": round(channel_rate),
            "registry_folded_after_start_s": round(registry_folded_s, 2),
            "heartbeats_folded_per_s": round(beat_rate),
            "heartbeat_mb_folded_per_s": round(beat_rate * payload / total / 1e6, 2),
            "evaluation_s": round(_or_nan(sample.value("chatlog_monitor_evaluation_seconds")), 4),
            "uncovered_reported": sample.value("chatlog_monitor_uncovered_channels", replica="0"),
            "monitor_rss_mb": round(rss_kb / 1024),
        }
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return result


if __name__ == "__main__":
    from core.settings import load

    print(json.dumps(run(load(KafkaSettings)), indent=2))
