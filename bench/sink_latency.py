"""The latency half of ``chatlog bench sink``: a steady load from another process while the sink streams.

Latency = Cassandra write time of the row (``WRITETIME(line)`` of its ``chat_by_channel`` row, set by the
driver when it sends the write) minus ``sent_at`` (the produce time).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Final

import msgspec

from bench.sink_data import fresh, synthetic_events
from core.times import epoch_ms
from schemas.chat_event import ChatEvent, encode
from schemas.cql import message_uuid
from sink.settings import SinkSettings

LOAD_POOL_EVENTS = 100_000
"""Distinct event shapes the steady load cycles through (each sent with a fresh message id)."""
TIMELINE_POINTS: Final = 2000
"""About how many points of a run's timeline its result keeps (for the plot)."""


def steady_load(settings: SinkSettings, rate: int, seconds: float) -> tuple[int, float, int]:
    """Produce synthetic events at ``rate`` per second for ``seconds``, each with ``sent_at`` = now;
    returns (events sent, seconds taken, start time in epoch ms)."""
    from confluent_kafka import Producer

    from core.settings import KafkaSettings
    from ingest.producer import producer_config
    from ingest.settings import IngestSettings

    # the ingesters' producer (batching, compression, partitioner): the records arrive as in production
    kafka = settings.model_dump(include=set(KafkaSettings.model_fields))
    producer = Producer(producer_config(IngestSettings(**kafka), "bench-sink-load"))
    total = int(rate * seconds) + 1
    # a pool of shapes, each produced with a new id: holding every event of 20 minutes at 5k/s grew
    # past 11 GB
    pool = synthetic_events(min(total, LOAD_POOL_EVENTS), seed=11)
    tick = 0.01
    per_tick = rate * tick
    start = time.monotonic()
    start_ms = int(time.time() * 1000)
    sent = 0
    while sent < total:
        due = min(total, int((time.monotonic() - start) / tick * per_tick) + 1)
        while sent < due:
            now = int(time.time() * 1000)
            shape = pool[sent % len(pool)]
            mid = str(uuid.uuid4())
            e = msgspec.structs.replace(
                shape,
                message_id=mid,
                tags={**shape.tags, "id": mid, "tmi-sent-ts": str(now)},
                sent_at=now,
                received_at=now,
                raw=_with_id_and_time(shape, mid, now),
            )
            producer.produce(settings.topic_messages, encode(e), e.channel.encode())
            sent += 1
        producer.poll(0)
        time.sleep(max(0.0, start + (sent / rate) - time.monotonic()))
    producer.flush(30)
    return sent, time.monotonic() - start, start_ms


def _with_id_and_time(shape: ChatEvent, message_id: str, sent_at: int) -> str:
    """``shape.raw`` with its ``id`` and ``tmi-sent-ts`` tag values replaced by the new event's, so the
    line says what the event says (the sink strips exactly these values from the stored line)."""
    tags, sep, rest = shape.raw.partition(" ")
    old_id, old_ts = shape.tags.get("id"), shape.tags.get("tmi-sent-ts")
    out = []
    for element in tags.split(";"):
        key, eq, value = element.partition("=")
        name = key.lstrip("@")
        if eq and name == "id" and value == old_id:
            out.append(f"{key}={message_id}")
        elif eq and name == "tmi-sent-ts" and value == old_ts:
            out.append(f"{key}={sent_at}")
        else:
            out.append(element)
    return ";".join(out) + sep + rest


def latency(
    settings: SinkSettings,
    rate: int,
    seconds: float,
    trigger: str,
    work: Path,
    tag: str,
    *,
    warmup_s: float = 30.0,
) -> dict[str, Any]:
    """Latency of the events produced in ``seconds`` of steady load at ``rate``, after ``warmup_s``
    seconds of the same load (the sink's first batches, its JIT warm-up) that are not measured."""
    with fresh(settings, tag, work) as scratch:
        return _measure(scratch.model_copy(update={"sink_trigger": trigger}), rate, seconds, warmup_s)


def _measure(s: SinkSettings, rate: int, seconds: float, warmup_s: float) -> dict[str, Any]:
    """The sink streaming on ``s`` in a thread of this process, the load from another; then the rows."""
    from confluent_kafka import Producer

    from sink.job import stream
    from sink.job.progress import Metrics

    stop = threading.Event()
    metrics = Metrics(0)
    failure: list[BaseException] = []

    def sink() -> None:
        try:
            stream.run(s, stop=stop, metrics=metrics)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()

    def written() -> float:
        return metrics.registry.get_sample_value("chatlog_sink_events_written_total") or 0.0

    warm = synthetic_events(200, seed=99)
    producer = Producer({**s.kafka_client_config(), "linger.ms": 2})
    for e in warm:
        producer.produce(s.topic_messages, encode(e), e.channel.encode())
    producer.flush(30)
    deadline = time.monotonic() + 180
    while written() < len(warm) and time.monotonic() < deadline and not failure:
        time.sleep(0.2)
    # the load comes from another process, as the ingesters are: in this one it would contend with the
    # sink's driver (the foreachBatch callback runs here) for the GIL and slow every batch
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        sent, produce_s, load_start_ms = pool.apply(steady_load, (s, rate, warmup_s + seconds))
    measured_from_ms = load_start_ms + int(warmup_s * 1000)
    deadline = time.monotonic() + 300
    while written() < len(warm) + sent and time.monotonic() < deadline and not failure:
        time.sleep(0.2)
    stop.set()
    thread.join(120)
    if failure:
        raise failure[0]
    timeline = written_timeline(s, {message_uuid(e.message_id) for e in warm})
    latencies = sorted(latency for sent_ms, latency in timeline if sent_ms >= measured_from_ms)

    def pct(p: float) -> float:
        value = percentile(latencies, p)
        return 0.0 if value is None else value

    return {
        "rate_target": rate,
        "rate_achieved": round(sent / produce_s),
        "seconds": seconds,
        "warmup_s": warmup_s,
        "trigger": s.sink_trigger,
        "events": len(latencies),
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "max_ms": round(latencies[-1], 1) if latencies else 0.0,
        "timeline": plotted(timeline, load_start_ms),
    }


def percentile(values: list[float], p: float) -> float | None:
    """The ``p`` quantile (0..1) of the sorted ``values``, to 0.1; None for none."""
    return round(values[min(len(values) - 1, int(p * len(values)))], 1) if values else None


def plotted(timeline: list[tuple[int, float]], t0_ms: int) -> list[tuple[float, int]]:
    """Every n-th point of ``timeline`` (``(sent ms, latency ms)``), about :data:`TIMELINE_POINTS` of them,
    as (seconds since ``t0_ms``, latency ms rounded): a run's timeline in its result."""
    step = max(1, len(timeline) // TIMELINE_POINTS)
    return [(round((t - t0_ms) / 1000, 2), round(v)) for t, v in timeline[::step]]


def written_timeline(s: SinkSettings, leave_out: set[uuid.UUID]) -> list[tuple[int, float]]:
    """``(sent_at ms, write time - sent_at ms)`` of every ``chat_by_channel`` row but those keyed by
    ``leave_out`` (the warm-up's: rows are keyed by the uuid of the event id), in sent order."""
    from core.cql import connect

    cluster, session = connect(s, keyspace=s.cassandra_keyspace)
    try:
        timeline = []
        for row in session.execute("SELECT message_id, sent_at, WRITETIME(line) AS wt FROM chat_by_channel"):
            if row.message_id in leave_out:
                continue
            sent_ms = epoch_ms(row.sent_at)
            timeline.append((sent_ms, row.wt / 1000 - sent_ms))
    finally:
        cluster.shutdown()
    timeline.sort()
    return timeline
