"""Live numbers of a run: the simulator's progress lines and the sink's Prometheus metrics."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from lab.scrape import scrape

SINK_METRICS_PORT = 9181
# names of the sink's metrics (sink/job/progress.py)
ROWS = "chatlog_sink_events_written"
EVENTS_IN = "chatlog_sink_events_in"
DUPLICATES = "chatlog_sink_duplicates_dropped"
DEADLETTERS = "chatlog_sink_deadletters"


@dataclass(frozen=True)
class Stats:
    at: float = 0.0
    sent: int = 0
    sent_rate: float = 0.0
    sim_done: bool = False
    rows: int = 0
    rows_rate: float = 0.0
    duplicates: int = 0
    rows_stable_since: float = 0.0
    produced: int = 0
    read: int = 0

    def drained(self, quiet_s: float = 3.0) -> bool:
        """The simulator is done, the sink has read every record in the topic and written since."""
        return (
            self.sim_done
            and self.produced > 0
            and self.read >= self.produced
            and time.time() - self.rows_stable_since >= quiet_s
        )


def _simulator(log: Path) -> tuple[int, bool]:
    sent, done = 0, False
    with contextlib.suppress(OSError):
        for line in log.read_text().splitlines()[-5:]:
            with contextlib.suppress(ValueError):
                d = json.loads(line)
                if isinstance(d, dict) and "sent" in d:
                    sent = max(sent, int(d["sent"]))
                    done = done or d.get("event") == "done"
    return sent, done


def sink_metrics(port: int = SINK_METRICS_PORT) -> dict[str, float]:
    """Sample values of the sink's metrics, summed over labels; empty if the endpoint is not up."""
    metrics = scrape(port)
    return metrics.totals() if metrics is not None else {}


def pick(metrics: dict[str, float], name: str) -> float | None:
    for key in (name, f"{name}_total"):
        if key in metrics:
            return metrics[key]
    return None


def poll(prev: Stats, sim_log: Path, produced: int, port: int = SINK_METRICS_PORT) -> Stats:
    """New numbers; ``produced`` is the number of records in the messages topic now, ``port`` the sink's
    metrics port."""
    now = time.time()
    sent, done = _simulator(sim_log)
    m = sink_metrics(port)
    rows = int(pick(m, ROWS) or prev.rows)
    dt = max(1e-3, now - prev.at) if prev.at else 1.0
    return replace(
        prev,
        at=now,
        sent=sent,
        sent_rate=(sent - prev.sent) / dt,
        sim_done=done,
        rows=rows,
        rows_rate=(rows - prev.rows) / dt,
        duplicates=int(pick(m, DUPLICATES) or prev.duplicates),
        rows_stable_since=prev.rows_stable_since if rows == prev.rows and prev.at else now,
        produced=produced,
        read=int(pick(m, EVENTS_IN) or prev.read),
    )
