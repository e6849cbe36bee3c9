"""The catch-up half of ``chatlog bench sink`` (``--outage-s``): a sink that falls behind, then catches up.

The sink streams and is warmed up; then it stops (an outage: a deploy, a crash) while a steady load from
another process goes on at ``rate``, so a backlog of ``rate x outage_s`` events builds up in Kafka; after
``outage_s`` the sink starts again on the same checkpoint, as a restarted pod does, and reads the backlog
in micro-batches of at most ``sink_max_offsets_per_trigger`` records while the load goes on for
``seconds`` more. Measured from the rows' write times (:func:`bench.sink_latency.written_timeline`):

* ``caught_up_s``: from the restart to the write of the last event whose latency was over
  :data:`CAUGHT_UP_MS` (every later event was written within it): how long the sink took to be live again;
* the drain rate (events written per second over that time) against the load's rate;
* the micro-batches of the restarted sink: how many, their mean duration, and the longest as the upper
  bound of its bucket in ``chatlog_sink_batch_duration_seconds`` (a batch is bounded by the records it may
  read, so none grows with the backlog);
* latency after catching up (p50/p99 of the events sent from then on).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any, Final

from bench.sink_data import fresh, synthetic_events
from bench.sink_latency import percentile, plotted, steady_load, written_timeline
from core.errors import ChatlogError
from schemas.chat_event import encode
from schemas.cql import message_uuid
from sink.settings import SinkSettings

CAUGHT_UP_MS: Final = 2000.0
"""An event written within this of its send is live (issue 14's p99 goal)."""
WRITE_WAIT_S: Final = 900.0


class _Sink:
    """``sink.job.stream.run`` in a thread of this process, started and stopped on demand."""

    def __init__(self, settings: SinkSettings) -> None:
        from sink.job.progress import Metrics

        self.settings = settings
        self.metrics = Metrics(0)
        self.stop = threading.Event()
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from sink.job import stream

        try:
            stream.run(self.settings, stop=self.stop, metrics=self.metrics)
        except BaseException as exc:
            self.failure.append(exc)

    def written(self) -> float:
        return self.metrics.registry.get_sample_value("chatlog_sink_events_written_total") or 0.0

    def wait_written(self, n: float, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.written() < n and not self.failure:
            if time.monotonic() > deadline:
                done = self.written()
                raise ChatlogError(f"the sink wrote {done:.0f} of {n:.0f} events in {timeout:.0f} s")
            time.sleep(0.2)
        if self.failure:
            raise self.failure[0]

    def batches(self) -> dict[str, Any]:
        """Count, mean and the longest's bucket bound of the micro-batches this sink ran."""
        get = self.metrics.registry.get_sample_value
        count = get("chatlog_sink_batch_duration_seconds_count") or 0.0
        total = get("chatlog_sink_batch_duration_seconds_sum") or 0.0
        bounds = []
        for sample in self.metrics.registry.collect():
            if sample.name == "chatlog_sink_batch_duration_seconds":
                bounds = [
                    (float(x.labels["le"]), x.value) for x in sample.samples if x.name.endswith("_bucket")
                ]
        longest = next((le for le, n in sorted(bounds) if n >= count), None) if count else None
        return {
            "batches": int(count),
            "mean_s": round(total / count, 2) if count else None,
            "longest_at_most_s": longest,
        }

    def close(self) -> None:
        self.stop.set()
        self.thread.join(180)
        self.metrics.close()
        if self.failure:
            raise self.failure[0]


def recovery(
    timeline: list[tuple[int, float]], restart_ms: int, live_ms: float = CAUGHT_UP_MS
) -> tuple[float, int, int, list[float]]:
    """From ``(sent ms, latency ms)`` of every event and the restart time: seconds from the restart to the
    write of the last event later than ``live_ms``; the events sent before the restart (the backlog); the
    events written by then; the sorted latencies of the events sent after it."""
    caught_up_ms = max((t + lat for t, lat in timeline if lat > live_ms), default=float(restart_ms))
    caught_up_s = max(0.0, (caught_up_ms - restart_ms) / 1000)
    backlog = sum(1 for t, _lat in timeline if t < restart_ms)
    drained = sum(1 for t, lat in timeline if t + lat <= caught_up_ms)
    after = sorted(lat for t, lat in timeline if t >= caught_up_ms)
    return caught_up_s, backlog, drained, after


def catch_up(
    settings: SinkSettings, rate: int, outage_s: float, seconds: float, trigger: str, work: Path, tag: str
) -> dict[str, Any]:
    """The outage and catch-up described in the module doc, on scratch topics and a scratch keyspace."""
    with fresh(settings, tag, work) as scratch:
        return _catch_up(scratch.model_copy(update={"sink_trigger": trigger}), rate, outage_s, seconds)


def _catch_up(s: SinkSettings, rate: int, outage_s: float, seconds: float) -> dict[str, Any]:
    from confluent_kafka import Producer

    warm = synthetic_events(200, seed=98)
    first = _Sink(s)
    try:
        producer = Producer({**s.kafka_client_config(), "linger.ms": 2})
        for e in warm:
            producer.produce(s.topic_messages, encode(e), e.channel.encode())
        producer.flush(30)
        first.wait_written(len(warm), 180)
    finally:
        first.close()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        load = pool.apply_async(steady_load, (s, rate, outage_s + seconds))
        time.sleep(outage_s)  # the sink is down: the backlog grows at `rate`
        restart_ms = int(time.time() * 1000)
        second = _Sink(s)
        try:
            sent, produce_s, load_start_ms = load.get(timeout=outage_s + seconds + 600)
            second.wait_written(sent, WRITE_WAIT_S)  # its own count: the warm-up was the first sink's
            batches = second.batches()
        finally:
            second.close()
    timeline = written_timeline(s, {message_uuid(e.message_id) for e in warm})
    caught_up_s, backlog, drained, after = recovery(timeline, restart_ms)
    return {
        "rate_target": rate,
        "rate_achieved": round(sent / produce_s),
        "outage_s": outage_s,
        "seconds_after_restart": seconds,
        "trigger": s.sink_trigger,
        "max_offsets_per_trigger": s.sink_max_offsets_per_trigger,
        "events": len(timeline),
        "backlog_at_restart": backlog,
        "caught_up_s": round(caught_up_s, 1),
        "caught_up": caught_up_s < seconds,
        "drain_events_per_s": round(drained / caught_up_s) if caught_up_s > 0 else None,
        "batches_after_restart": batches,
        "after_catch_up": {
            "events": len(after),
            "p50_ms": percentile(after, 0.5),
            "p99_ms": percentile(after, 0.99),
        },
        "timeline": plotted(timeline, load_start_ms),
        "restart_at_s": round((restart_ms - load_start_ms) / 1000, 2),
    }


def summary(result: dict[str, Any]) -> str:
    """One line of the catch-up run."""
    b = result["batches_after_restart"]
    after = result["after_catch_up"]
    state = f"caught up in {result['caught_up_s']} s" if result["caught_up"] else "NOT caught up"
    return (
        f"catch-up: {result['backlog_at_restart']:,} events behind after a {result['outage_s']:.0f} s "
        f"outage at {result['rate_achieved']:,} events/s; {state} "
        f"(drained {result['drain_events_per_s']} events/s); {b['batches']} batches after the restart, "
        f"mean {b['mean_s']} s, longest <= {b['longest_at_most_s']} s "
        f"(at most {result['max_offsets_per_trigger']:,} records each); then p50 {after['p50_ms']} ms, "
        f"p99 {after['p99_ms']} ms"
    )
