"""Prometheus metrics of the HTTP service (``/metrics``), in a registry of the app's own.

With several worker processes (:mod:`serve.api.workers`) each one counts its own requests, and ``/metrics``,
whichever worker answers it, reports the sums of all of them: prometheus_client's multiprocess mode, where
every process keeps its values in files of the directory :data:`MULTIPROCESS_DIR` names (set before
prometheus_client is imported) and a scrape reads them all (:func:`exposition`). That mode sums Counters
and Histograms as they are; a Gauge added here would need its ``multiprocess_mode``.
"""

from __future__ import annotations

import os
import time
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MULTIPROCESS_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"
"""The variable that puts prometheus_client in multiprocess mode (the directory of every worker's values)."""


class ServeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "chatlog_serve_requests",
            "HTTP requests answered, by route template and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "chatlog_serve_response_start_seconds",
            "Time from the request to the start of the response, by route template.",
            ["route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.lines = Counter(
            "chatlog_serve_lines", "Log lines streamed, by format.", ["format"], registry=self.registry
        )


def exposition(metrics: ServeMetrics) -> bytes:
    """The body of ``/metrics``: ``metrics`` of this process, or in multiprocess mode every worker's."""
    if not os.environ.get(MULTIPROCESS_DIR):
        return generate_latest(metrics.registry)
    from prometheus_client.multiprocess import MultiProcessCollector

    every_worker = CollectorRegistry()
    MultiProcessCollector(every_worker)  # type: ignore[no-untyped-call]
    return generate_latest(every_worker)


class MetricsMiddleware:
    """Counts every request by the template of the route that answered it (not by its path). The labelled
    series are kept by their labels (prometheus_client's ``labels()`` takes a lock and checks them on every
    call); there are as many as routes and statuses."""

    def __init__(self, app: ASGIApp, metrics: ServeMetrics) -> None:
        self.app = app
        self.metrics = metrics
        self._latency: dict[str, Any] = {}
        self._requests: dict[tuple[str, int], Any] = {}

    def _observe(self, route: str, seconds: float) -> None:
        series = self._latency.get(route)
        if series is None:
            series = self._latency[route] = self.metrics.latency.labels(route)
        series.observe(seconds)

    def _count(self, route: str, status: int) -> None:
        series = self._requests.get((route, status))
        if series is None:
            series = self._requests[route, status] = self.metrics.requests.labels(route, str(status))
        series.inc()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                self._observe(getattr(scope.get("route"), "path", "other"), time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._count(getattr(scope.get("route"), "path", "other"), status)
