"""serve/api/metrics.py: ``/metrics`` of one process, and with several workers the sums of all of them
(prometheus_client's multiprocess mode, which each process enters when it imports prometheus_client)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Message, Receive, Scope, Send

from serve.api.metrics import MULTIPROCESS_DIR, MetricsMiddleware, ServeMetrics, exposition

WORKER = """
import sys
from serve.api.metrics import ServeMetrics
metrics = ServeMetrics()
for _ in range(int(sys.argv[1])):
    metrics.requests.labels("/channels", "200").inc()
    metrics.latency.labels("/channels").observe(0.003)
metrics.lines.labels("text").inc(7)
"""


def _samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_one_process_reports_its_own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROCESS_DIR, raising=False)
    metrics = ServeMetrics()
    metrics.requests.labels("/channels", "200").inc(3)
    samples = _samples(exposition(metrics))
    assert samples[("chatlog_serve_requests_total", (("route", "/channels"), ("status", "200")))] == 3


def test_with_workers_every_workers_requests_are_counted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = {**os.environ, MULTIPROCESS_DIR: str(tmp_path)}
    for count in (5, 8):  # two worker processes, each with its own values
        subprocess.run([sys.executable, "-c", WORKER, str(count)], env=env, check=True, timeout=60)
    assert len(list(tmp_path.glob("counter_*.db"))) == 2
    monkeypatch.setenv(MULTIPROCESS_DIR, str(tmp_path))
    samples = _samples(exposition(ServeMetrics()))  # whichever worker is scraped: every worker's values
    assert samples[("chatlog_serve_requests_total", (("route", "/channels"), ("status", "200")))] == 13
    assert samples[("chatlog_serve_response_start_seconds_count", (("route", "/channels"),))] == 13
    assert samples[("chatlog_serve_lines_total", (("format", "text"),))] == 14


def test_the_middleware_counts_each_request_by_route_template_and_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MULTIPROCESS_DIR, raising=False)
    metrics = ServeMetrics()

    class Route:
        path = "/{ct}/{c}"

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] != "/nowhere":
            scope["route"] = Route
        await send({"type": "http.response.start", "status": 404 if scope["path"] == "/nowhere" else 200})
        await send({"type": "http.response.body", "body": b""})

    async def sent(message: Message) -> None:
        return None

    async def go() -> None:
        middleware = MetricsMiddleware(answer, metrics)
        for path in ("/a/b", "/a/c", "/nowhere", "/a/d"):
            await middleware({"type": "http", "path": path}, sent, sent)  # type: ignore[arg-type]

    asyncio.run(go())
    samples = _samples(exposition(metrics))
    assert samples[("chatlog_serve_requests_total", (("route", "/{ct}/{c}"), ("status", "200")))] == 3
    assert samples[("chatlog_serve_requests_total", (("route", "other"), ("status", "404")))] == 1
    assert samples[("chatlog_serve_response_start_seconds_count", (("route", "/{ct}/{c}"),))] == 3
