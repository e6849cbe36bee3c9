"""Reading a process's Prometheus ``/metrics`` endpoint, as the benchmarks and the demo watch the
ingesters, the sink and the monitor they start (parsed by prometheus_client's own text parser)."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


@dataclass(frozen=True)
class Scrape:
    """The samples of one scrape."""

    samples: tuple[Sample, ...]

    def value(self, name: str, /, **labels: str) -> float | None:
        """The sum of the samples called ``name`` (as exposed: a counter's ends in ``_total``) whose labels
        include ``labels``; None when there is no such sample."""
        found = [
            s.value
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        ]
        return sum(found) if found else None

    def totals(self) -> dict[str, float]:
        """Each sample name's values summed over their labels (histogram buckets and ``_created``
        timestamps left out)."""
        out: dict[str, float] = {}
        for s in self.samples:
            if not s.name.endswith(("_created", "_bucket")):
                out[s.name] = out.get(s.name, 0.0) + s.value
        return out


def parse(text: str) -> Scrape:
    """A text exposition (what ``/metrics`` answers) as a :class:`Scrape`."""
    return Scrape(tuple(s for family in text_string_to_metric_families(text) for s in family.samples))


def scrape(port: int, *, host: str = "127.0.0.1", timeout: float = 2.0) -> Scrape | None:
    """The samples ``http://host:port/metrics`` answers now; None while nothing answers there."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    return parse(text)
