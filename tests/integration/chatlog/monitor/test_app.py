"""``chatlog monitor`` on the real Kafka: registry records and heartbeats in, ``/coverage`` out.

The monitor runs as its own process (``python -m chatlog monitor``, a faust worker) against fresh
topics. Heartbeats are produced by the ingester's own producer in the real format; a live worker keeps
beating from a thread, as a real ingester does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from core.kafka_admin import admin_client
from core.settings import StackSettings
from core.times import now_ms
from ingest import status
from ingest.producer import IngestProducer
from ingest.registry import PARTITIONER, Registry, encode_record
from ingest.settings import IngestSettings

pytestmark = pytest.mark.integration

CHANNELS = ["mon_a", "mon_b", "mon_c", "mon_d", "mon_e", "mon_f"]
STALE_S = 4.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Beats:
    """Heartbeats through the ingester's producer; ``keep`` re-sends some every second from a thread."""

    def __init__(self, settings: StackSettings) -> None:
        ingest_settings = IngestSettings.model_validate(
            {
                "kafka_bootstrap_servers": settings.kafka_bootstrap_servers,
                "topic_messages": settings.topic_messages,
                "topic_deadletter": settings.topic_deadletter,
                "topic_status": settings.topic_status,
            }
        )
        self.producer = IngestProducer(ingest_settings, "monitor-test")
        self.lock = threading.Lock()
        self.live: dict[str, status.Heartbeat] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def send(self, hb: status.Heartbeat) -> None:
        with self.lock:
            self.producer.produce_status(
                status.status_key(hb.replica, hb.worker_id), status.encode_heartbeat(hb)
            )
            assert self.producer.flush(10) == 0

    def keep(self, worker: str, replica: int, confirmed: list[str], buckets: list[int]) -> None:
        with self.lock:
            self.live[worker] = beat(worker, replica, confirmed, buckets)
        self.send(self.live[worker])

    def _loop(self) -> None:
        while not self.stop.wait(1.0):
            with self.lock:
                beats = list(self.live.values())
            for hb in beats:
                hb.sent_at = now_ms()
                self.send(hb)


def beat(
    worker: str, replica: int, confirmed: list[str], buckets: list[int], age_s: float = 0
) -> status.Heartbeat:
    now = now_ms()
    return status.Heartbeat(
        worker_id=worker,
        replica=replica,
        host="test",
        pid=os.getpid(),
        started_at=now - 600_000,
        sent_at=now - int(age_s * 1000),
        buckets=buckets,
        confirmed=sorted(confirmed),
        rates={"events": 1.5},
    )


class MonitorProcess:
    """``python -m chatlog monitor`` with the test's topics, ports and app id; its log goes to a file."""

    def __init__(self, settings: StackSettings, app_id: str, log: Path) -> None:
        self.web_port = _free_port()
        self.metrics_port = _free_port()
        self.log = log
        env = {
            **os.environ,
            "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
            "CHATLOG_TOPIC_CHANNELS": settings.topic_channels,
            "CHATLOG_TOPIC_STATUS": settings.topic_status,
            "CHATLOG_TOPIC_MESSAGES": settings.topic_messages,
            "CHATLOG_TOPIC_DEADLETTER": settings.topic_deadletter,
            "CHATLOG_MONITOR_APP_ID": app_id,
            "CHATLOG_MONITOR_WEB_PORT": str(self.web_port),
            "CHATLOG_MONITOR_WEB_BIND": "127.0.0.1",
            "CHATLOG_MONITOR_METRICS_PORT": str(self.metrics_port),
            "CHATLOG_MONITOR_METRICS_HOST": "127.0.0.1",
            "CHATLOG_MONITOR_REPLICAS": "2",
            "CHATLOG_MONITOR_STALE_S": str(STALE_S),
            "CHATLOG_MONITOR_INTERVAL_S": "0.5",
        }
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "chatlog", "monitor"], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def get(self, path: str) -> tuple[int, Any]:
        url = f"http://127.0.0.1:{self.web_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return int(resp.status), json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return str(resp.read().decode())

    def wait_for(
        self, what: str, check: Callable[[dict[str, Any]], bool], timeout: float = 40.0
    ) -> dict[str, Any]:
        """Poll /coverage until a ready report passes ``check``."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"monitor exited with {self.proc.returncode}:\n{self.tail()}")
            with contextlib.suppress(OSError):
                code, last = self.get("/coverage")
                if code == 200 and last.get("ready") and check(last):
                    return dict(last)
            time.sleep(0.3)
        pytest.fail(f"timed out waiting for {what}; last /coverage: {last}\n{self.tail()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                pytest.fail(f"monitor did not stop within 30 s of SIGTERM:\n{self.tail()}")
        return int(self.proc.returncode)

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])


def uncovered(report: dict[str, Any], replica: int) -> set[str]:
    return {u["channel"] for u in replica_of(report, replica)["uncovered"]}


def replica_of(report: dict[str, Any], replica: int) -> dict[str, Any]:
    [found] = [r for r in report["replicas"] if r["replica"] == replica]
    return dict(found)


def gauge(text: str, name: str, replica: int) -> float:
    prefix = f'{name}{{replica="{replica}"}} '
    [line] = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(line[len(prefix) :])


def register_long_ago(settings: StackSettings, logins: list[str]) -> None:
    """Registry records as `chatlog channels add` writes them, but added an hour ago."""
    producer = Producer(
        {**settings.kafka_client_config(), "partitioner": PARTITIONER, "compression.type": "lz4"}
    )
    added_at = now_ms() - 3_600_000
    for login in logins:
        producer.produce(settings.topic_channels, encode_record(login, added_at), login)
    assert producer.flush(30) == 0


@pytest.fixture
def monitor_app_id(fresh_topics: StackSettings, unique: str) -> Iterator[str]:
    """A fresh faust app id; its changelog topics and consumer group are deleted afterwards."""
    app_id = f"t{unique}-monitor"
    yield app_id
    admin = admin_client(fresh_topics)
    names = [t for t in admin.list_topics(timeout=30).topics if t.startswith(f"{app_id}-")]
    if names:
        for fut in admin.delete_topics(names, operation_timeout=30).values():
            with contextlib.suppress(Exception):
                fut.result()
    for fut in admin.delete_consumer_groups([app_id], request_timeout=30).values():
        with contextlib.suppress(Exception):
            fut.result()


def test_monitor_reports_exactly_the_uncovered_channels_and_recovers(
    fresh_topics: StackSettings, monitor_app_id: str, tmp_path: Path
) -> None:
    settings = fresh_topics
    registry = Registry(settings)
    register_long_ago(settings, CHANNELS)
    beats = Beats(settings)
    # replica 0: a live worker logs a-c, a worker that died 60 s ago logged d-e, nobody ever logged f.
    beats.keep("r0-live", 0, ["mon_a", "mon_b", "mon_c"], buckets=list(range(8)))
    dead = beat("r0-dead", 0, ["mon_d", "mon_e"], buckets=list(range(8, 16)), age_s=60)
    beats.send(dead)
    # replica 1: one live worker logs everything; a worker that stopped gracefully left a tombstone.
    beats.keep("r1-all", 1, CHANNELS, buckets=list(range(16)))
    gone = beat("r1-gone", 1, CHANNELS, buckets=[])
    gone.state = status.STOPPED
    beats.send(gone)
    beats.producer.produce_status(status.status_key(1, "r1-gone"), None)
    beats.thread.start()

    monitor = MonitorProcess(settings, monitor_app_id, tmp_path / "monitor.log")
    try:
        report = monitor.wait_for(
            "the initial report",
            lambda r: r["registered"] == 6 and uncovered(r, 0) == {"mon_d", "mon_e", "mon_f"},
        )
        r0, r1 = replica_of(report, 0), replica_of(report, 1)
        assert uncovered(report, 1) == set()
        assert r0["live_workers"] == 1 and r1["live_workers"] == 1
        assert r0["confirmed"] == 3 and r1["confirmed"] == 6
        assert r0["owners"] == {"r0-live": list(range(8))}
        assert set(r0["unowned_buckets"]) <= set(range(8, 16))  # only the dead worker's buckets
        assert {u["bucket"] for u in r0["uncovered"] if u["bucket"] >= 8} <= set(r0["unowned_buckets"])
        assert [d["worker_id"] for d in r0["dead_workers"]] == ["r0-dead"]
        assert r1["dead_workers"] == []  # the tombstone removed the stopped worker
        since = {u["channel"]: u["since"] for u in r0["uncovered"]}
        assert (
            since["mon_d"] == since["mon_e"] == dead.sent_at
        )  # lost when the dead worker last confirmed them
        assert since["mon_f"] > dead.sent_at
        assert r0["longest_uncovered_s"] >= 60
        assert report["ok"] is False
        code, limited = monitor.get("/coverage?limit=1")  # a limit caps the list, not the count
        assert code == 200 and len(replica_of(limited, 0)["uncovered"]) == 1
        assert replica_of(limited, 0)["uncovered_count"] == 3
        code, body = monitor.get("/coverage?limit=x")
        assert code == 400 and "limit" in body["error"]

        text = monitor.metrics()
        assert gauge(text, "chatlog_monitor_uncovered_channels", 0) == 3
        assert gauge(text, "chatlog_monitor_uncovered_channels", 1) == 0
        assert gauge(text, "chatlog_monitor_live_workers", 0) == 1
        assert gauge(text, "chatlog_monitor_longest_uncovered_seconds", 0) >= 60

        # The dead worker comes back and confirms d-f; a-c's worker keeps beating: nothing is uncovered.
        beats.keep("r0-dead", 0, ["mon_d", "mon_e", "mon_f"], buckets=list(range(8, 16)))
        report = monitor.wait_for("full coverage", lambda r: r["ok"])
        assert all(r["uncovered_count"] == 0 and r["uncovered"] == [] for r in report["replicas"])
        assert replica_of(report, 0)["live_workers"] == 2
        text = monitor.metrics()
        assert gauge(text, "chatlog_monitor_uncovered_channels", 0) == 0
        assert gauge(text, "chatlog_monitor_longest_uncovered_seconds", 0) == 0

        # A removal (tombstone) leaves the registry; the workers still joined to it are counted apart.
        registry.remove(["mon_a"])
        report = monitor.wait_for("the removal", lambda r: r["registered"] == 5)
        assert replica_of(report, 0)["unregistered_joined"] == 1
        assert report["ok"] is True

        # A restart restores the tables from faust's changelog topics and reports the same.
        assert monitor.stop() == 0
        monitor = MonitorProcess(settings, monitor_app_id, tmp_path / "monitor.log")
        report = monitor.wait_for("the report after a restart", lambda r: r["registered"] == 5 and r["ok"])
        assert replica_of(report, 0)["live_workers"] == 2
    finally:
        beats.stop.set()
        beats.thread.join(5)
        assert monitor.stop() == 0, monitor.tail()
