"""Prometheus metrics of one ingester, and its HTTP endpoint.

The hot path never calls prometheus_client: it bumps plain integers and a :class:`FastHistogram`;
:class:`IngestCollector` turns them into metric families when Prometheus scrapes. The endpoint serves
``/metrics`` (an answer there is liveness) and ``/ready`` (200 when the ingester owns loaded buckets or
the group has no bucket for it, else 503).
"""

from __future__ import annotations

import errno
import logging
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final
from wsgiref.simple_server import make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler

from core.errors import ChatlogError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

log = logging.getLogger(__name__)

LATENCY_BOUNDS_S: Final[tuple[float, ...]] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip


class FastHistogram:
    """A histogram for one thread: one ``bisect`` and two additions per observation."""

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BOUNDS_S) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def family(self, name: str, documentation: str, labels: dict[str, str]) -> HistogramMetricFamily:
        counts = list(self.counts)
        cumulative, buckets = 0, []
        for bound, count in zip((*self.bounds, float("inf")), counts, strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        fam = HistogramMetricFamily(name, documentation, labels=list(labels))
        fam.add_metric(list(labels.values()), buckets, self.sum)
        return fam

    def quantile(self, q: float) -> float | None:
        """An upper bound of the ``q`` quantile (the bucket bound it falls in); None when empty."""
        total = sum(self.counts)
        if not total:
            return None
        rank, seen = q * total, 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            seen += count
            if seen >= rank:
                return bound
        return float("inf")


@dataclass(frozen=True)
class Sample:
    """One metric value for the collector: counter or gauge."""

    name: str
    documentation: str
    value: float
    kind: str = "counter"


_METRIC: Final = "metric"


def counter(name: str, documentation: str) -> int:
    """A counter field of a stats dataclass (0 at first) that :func:`counter_samples` exports as the counter
    ``name``; ``documentation`` says what it counts, once, where the field is declared."""
    declared: int = field(default=0, metadata={_METRIC: (name, documentation)})
    return declared


def counter_samples(stats: DataclassInstance) -> list[Sample]:
    """A sample of each :func:`counter` field of ``stats``, in the order declared."""
    out = []
    for f in fields(stats):
        if _METRIC in f.metadata:
            name, documentation = f.metadata[_METRIC]
            out.append(Sample(name, documentation, getattr(stats, f.name)))
    return out


class IngestCollector:
    """Reads the worker's numbers at scrape time (``samples`` and ``histograms`` are callables)."""

    def __init__(
        self,
        labels: dict[str, str],
        samples: Callable[[], Iterable[Sample]],
        histograms: Callable[[], Iterable[tuple[str, str, FastHistogram]]],
    ) -> None:
        self._labels = labels
        self._samples = samples
        self._histograms = histograms

    def collect(self) -> Iterator[Metric]:
        names, values = list(self._labels), list(self._labels.values())
        for s in self._samples():
            fam: Metric
            if s.kind == "counter":
                fam = CounterMetricFamily(s.name, s.documentation, labels=names)
            else:
                fam = GaugeMetricFamily(s.name, s.documentation, labels=names)
            fam.add_metric(values, s.value)
            yield fam
        for name, doc, hist in self._histograms():
            yield hist.family(name, doc, self._labels)


class MetricsServer:
    """``/metrics`` and ``/ready`` on a background thread; port 0 picks a free port.

    ``fallback``: when ``port`` is taken, listen on a free port instead (the default port of several
    processes on one host); otherwise a taken port is a one-line :class:`ChatlogError` naming ``setting``.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        ready: Callable[[], bool],
        host: str,
        port: int,
        *,
        fallback: bool = False,
        setting: str = "CHATLOG_METRICS_PORT",
    ) -> None:
        metrics_app = make_wsgi_app(registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "/")
            if path == "/ready":
                try:
                    ok = ready()
                except Exception:
                    log.exception("readiness check failed")
                    ok = False
                start_response(
                    "200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain")]
                )
                return [b"ready\n" if ok else b"not ready\n"]
            if path == "/healthz":
                start_response("200 OK", [("Content-Type", "text/plain")])
                return [b"ok\n"]
            result: Iterable[bytes] = metrics_app(environ, start_response)
            return result

        def bind(at: int) -> ThreadingWSGIServer:
            server: ThreadingWSGIServer = make_server(
                host, at, app, ThreadingWSGIServer, handler_class=_SilentHandler
            )
            return server

        try:
            self._server = bind(port)
        except OSError as exc:
            if not (fallback and exc.errno == errno.EADDRINUSE):
                host_setting = setting.removesuffix("_PORT") + "_HOST"
                raise ChatlogError(
                    f"cannot listen on {host}:{port} ({host_setting}, {setting}): {exc.strerror or exc}"
                ) from None
            self._server = bind(0)
            log.info(
                "metrics port %d is taken (another process on this host): listening on %d instead "
                "(%s chooses one)", port, self._server.server_port, setting,
            )  # fmt: skip
        self.port: int = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
