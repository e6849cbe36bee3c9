"""``chatlog bench sink``: throughput of the sink next to a raw driver insert, and end-to-end latency.

Throughput: N synthetic Twitch-like events (10% of them produced twice, as a second replica would)
go into a fresh topic; the sink drains it (available-now trigger) into a fresh keyspace; the same
distinct events are then inserted without Spark by the same writer code in 1 and 2 processes (the
sink has 2 Python workers), and per row without batching, into other fresh keyspaces.
Latency: events produced at a steady rate (by another process, as the ingesters are) with ``sent_at`` =
produce time while the sink streams; latency = Cassandra write time of the row (``WRITETIME``, set by
the driver when it sends the write) minus ``sent_at``. Results: ``results/bench_sink.json`` and
``results/bench_sink.png``.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from chatlog.settings import PROJECT_ROOT
from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings

RESULTS = PROJECT_ROOT / "results"


def synthetic_events(
    n: int, seed: int = 7, *, channels: int = 500, now_ms: int | None = None
) -> list[ChatEvent]:
    """``n`` PRIVMSGs shaped like Twitch chat: Zipf-ish channels, a user pool each, ~12 tags."""
    rng = random.Random(seed)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    weights = [1 / (i + 1) for i in range(channels)]
    chosen = rng.choices(range(channels), weights=weights, k=n)
    words = [
        "kappa",
        "pog",
        "lul",
        "gg",
        "wp",
        "hello",
        "chat",
        "stream",
        "nice",
        "clip",
        "when",
        "what",
        "omegalul",
        "monka",
        "ez",
    ]
    out = []
    for i, c in enumerate(chosen):
        channel = f"chan{c:04d}"
        user = f"user{rng.randrange(5000 if c < 10 else 300):05d}"
        text = " ".join(rng.choices(words, k=rng.randint(2, 25)))
        sent = now - (n - i) * 2
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        tags = {
            "badge-info": "subscriber/12",
            "badges": "subscriber/12,premium/1",
            "color": "#1E90FF",
            "display-name": user.capitalize(),
            "emotes": "",
            "first-msg": "0",
            "id": mid,
            "mod": "0",
            "room-id": str(1000 + c),
            "subscriber": "1",
            "tmi-sent-ts": str(sent),
            "turbo": "0",
            "user-id": str(50000 + i % 7000),
            "user-type": "",
        }
        tag_text = ";".join(f"{k}={v}" for k, v in tags.items())
        raw = f"@{tag_text} :{user}!{user}@{user}.tmi.twitch.tv PRIVMSG #{channel} :{text}"
        out.append(
            ChatEvent(
                message_id=mid,
                kind="PRIVMSG",
                channel=channel,
                channel_id=tags["room-id"],
                user_login=user,
                user_id=tags["user-id"],
                display_name=tags["display-name"],
                text=text,
                sent_at=sent,
                received_at=sent + 40,
                tags=tags,
                raw=raw,
                ingester="bench-1",
            )
        )
    return out


def _produce(settings: SinkSettings, values: list[tuple[bytes, bytes]]) -> float:
    from confluent_kafka import Producer

    producer = Producer({**settings.kafka_client_config(), "linger.ms": 20, "compression.type": "lz4"})
    start = time.perf_counter()
    for key, value in values:
        while True:
            try:
                producer.produce(settings.topic_messages, value, key)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)
    return time.perf_counter() - start


def _raw_worker(args: tuple[SinkSettings, list[bytes]]) -> dict[str, Any]:
    from sink.writer import write_partition

    settings, values = args
    return write_partition(((v, None, None) for v in values), settings).to_dict()


def _raw_insert(settings: SinkSettings, values: list[bytes], processes: int) -> dict[str, Any]:
    """The same rows through the same writer, without Spark, in ``processes`` processes."""
    from sink.stream import ensure_schema
    from sink.writer import WriteStats

    ensure_schema(settings)
    parts = [values[i::processes] for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        pool.map(_raw_worker, [(settings, parts[i][:50]) for i in range(processes)])  # connect, prepare
        start = time.perf_counter()
        results = pool.map(_raw_worker, [(settings, part) for part in parts])
        seconds = time.perf_counter() - start
    total = WriteStats()
    for r in results:
        total.add(WriteStats.from_dict(r))
    return {
        "processes": processes,
        "batching": settings.sink_batch_max_rows > 1,
        "events": total.events,
        "rows": total.rows_total,
        "seconds": round(seconds, 2),
        "events_per_s": round(total.events / seconds),
        "rows_per_s": round(total.rows_total / seconds),
    }


def _fresh(settings: SinkSettings, tag: str, work: Path) -> SinkSettings:
    from chatlog.kafka_admin import ensure_topics

    fresh = settings.with_topics(
        f"bench{tag}",
        channel_buckets=4,
        cassandra_keyspace=f"bench{tag}",
        sink_checkpoint=str(work / tag / "checkpoint"),
        sink_metrics_port=0,
        cassandra_ttl_s=0,
    )
    ensure_topics(fresh)
    return fresh


def _drop(settings: SinkSettings, keyspaces: list[str]) -> None:
    """Remove what a run created: its keyspaces and its topics."""
    import contextlib

    from chatlog.cql import connect
    from chatlog.kafka_admin import admin_client

    cluster, session = connect(settings)
    try:
        for ks in keyspaces:
            session.execute(f"DROP KEYSPACE IF EXISTS {ks}", timeout=120)
    finally:
        cluster.shutdown()
    s = settings
    names = [s.topic_messages, s.topic_deadletter, s.topic_channels, s.topic_status]
    for future in admin_client(settings).delete_topics(names, operation_timeout=30).values():
        with contextlib.suppress(Exception):
            future.result(timeout=60)


def _throughput(settings: SinkSettings, events: int, work: Path, tag: str) -> dict[str, Any]:
    from sink import stream
    from sink.spark_session import get_session

    s = _fresh(settings, tag, work)
    distinct = synthetic_events(events)
    rng = random.Random(3)
    values = [(e.channel.encode(), encode(e)) for e in distinct]
    copies = [v for v in values if rng.random() < 0.10]
    produce_s = _produce(s, values + copies)
    get_session(s)
    start = time.perf_counter()
    totals = stream.run(s.model_copy(update={"sink_max_offsets_per_trigger": 50_000}), available_now=True)
    seconds = time.perf_counter() - start
    steady = [r for r in totals.reports[1:] if r.written.events]
    steady_s = sum(r.duration_s for r in steady)
    steady_events = sum(r.written.events for r in steady)
    steady_rows = sum(r.written.rows_total for r in steady)
    spark = {
        "steady_events_per_s": round(steady_events / steady_s) if steady_s else None,
        "steady_rows_per_s": round(steady_rows / steady_s) if steady_s else None,
        "events_in": totals.events_in,
        "duplicates_dropped": totals.duplicates,
        "events": totals.written.events,
        "rows": totals.written.rows_total,
        "rows_by_table": dict(totals.written.rows),
        "batches": totals.batches,
        "seconds": round(seconds, 2),
        "events_per_s": round(totals.written.events / seconds),
        "records_in_per_s": round(totals.events_in / seconds),
        "rows_per_s": round(totals.written.rows_total / seconds),
    }
    raw_values = [v for _k, v in values]
    raw: list[dict[str, Any]] = []
    keyspaces = [s.cassandra_keyspace]
    for processes in (1, 2):
        ks = f"{s.cassandra_keyspace}r{processes}"
        keyspaces.append(ks)
        raw.append(_raw_insert(s.model_copy(update={"cassandra_keyspace": ks}), raw_values, processes))
    ks = f"{s.cassandra_keyspace}row"
    keyspaces.append(ks)
    per_row = s.model_copy(
        update={"cassandra_keyspace": ks, "sink_batch_max_rows": 1, "sink_write_concurrency": 128}
    )
    raw.append(_raw_insert(per_row, raw_values[: min(len(raw_values), 30_000)], 2))
    _drop(s, keyspaces)
    best = max(r["rows_per_s"] for r in raw if r["batching"])
    steady_ratio = round(spark["steady_rows_per_s"] / best, 2) if spark["steady_rows_per_s"] else None
    return {
        "spark_steady_vs_best_raw": steady_ratio,
        "events_distinct": events,
        "records_produced": len(values) + len(copies),
        "produce_seconds": round(produce_s, 2),
        "spark": spark,
        "raw": raw,
        "spark_vs_best_raw": round(spark["rows_per_s"] / best, 2),
    }


def _steady_load(settings: SinkSettings, rate: int, seconds: float) -> tuple[int, float]:
    """Produce synthetic events at ``rate`` per second for ``seconds``, each with ``sent_at`` = now;
    returns (events sent, seconds taken)."""
    from confluent_kafka import Producer

    producer = Producer({**settings.kafka_client_config(), "linger.ms": 2})
    pool = synthetic_events(int(rate * seconds) + 1, seed=11)
    tick = 0.01
    per_tick = rate * tick
    start = time.monotonic()
    sent = 0
    while sent < len(pool):
        due = min(len(pool), int((time.monotonic() - start) / tick * per_tick) + 1)
        while sent < due:
            now = int(time.time() * 1000)
            e = msgspec.structs.replace(pool[sent], sent_at=now, received_at=now)
            producer.produce(settings.topic_messages, encode(e), e.channel.encode())
            sent += 1
        producer.poll(0)
        time.sleep(max(0.0, start + (sent / rate) - time.monotonic()))
    producer.flush(30)
    return sent, time.monotonic() - start


def _latency(
    settings: SinkSettings, rate: int, seconds: float, trigger: str, work: Path, tag: str
) -> dict[str, Any]:
    from confluent_kafka import Producer

    from chatlog.cql import connect
    from sink import stream
    from sink.progress import Metrics

    s = _fresh(settings, tag, work).model_copy(update={"sink_trigger": trigger})
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
        sent, produce_s = pool.apply(_steady_load, (s, rate, seconds))
    deadline = time.monotonic() + 300
    while written() < len(warm) + sent and time.monotonic() < deadline and not failure:
        time.sleep(0.2)
    stop.set()
    thread.join(120)
    if failure:
        raise failure[0]
    cluster, session = connect(s, keyspace=s.cassandra_keyspace)
    try:
        latencies = []
        timeline = []
        warm_ids = {e.message_id for e in warm}
        for row in session.execute(
            "SELECT message_id, sent_at, WRITETIME(kind) AS wt FROM messages_by_channel"
        ):
            if row.message_id in warm_ids:
                continue
            sent_ms = int(row.sent_at.timestamp() * 1000) if row.sent_at.tzinfo else _naive_ms(row.sent_at)
            latency = row.wt / 1000 - sent_ms
            latencies.append(latency)
            timeline.append((sent_ms, latency))
    finally:
        cluster.shutdown()
    _drop(s, [s.cassandra_keyspace])
    latencies.sort()
    timeline.sort()
    t0 = timeline[0][0] if timeline else 0

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1) if latencies else 0.0

    return {
        "rate_target": rate,
        "rate_achieved": round(sent / produce_s),
        "seconds": seconds,
        "trigger": trigger,
        "events": len(latencies),
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "max_ms": round(latencies[-1], 1) if latencies else 0.0,
        "timeline": [
            (round((t - t0) / 1000, 2), round(v)) for t, v in timeline[:: max(1, len(timeline) // 2000)]
        ],
    }


def _naive_ms(value: Any) -> int:
    from sink.reader import _ms

    return _ms(value)


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), dpi=80)
    thr = result.get("throughput")
    if thr is None:
        left.set_axis_off()
    else:
        labels = ["Spark sink", "Spark sink steady"] + [
            f"raw {r['processes']}p{' per row' if not r['batching'] else ''}" for r in thr["raw"]
        ]
        values = [thr["spark"]["rows_per_s"], thr["spark"]["steady_rows_per_s"] or 0] + [
            r["rows_per_s"] for r in thr["raw"]
        ]
        left.bar(labels, values, color=["#d62728", "#ff7f0e"] + ["#1f77b4"] * len(thr["raw"]))
        left.set_ylabel("Cassandra rows/s")
        left.set_title("Throughput (same rows)")
        left.tick_params(axis="x", labelsize=7)
    lat = result.get("latency")
    if lat and lat["timeline"]:
        xs, ys = zip(*lat["timeline"], strict=True)
        right.plot(xs, ys, ".", markersize=2)
        right.axhline(lat["p99_ms"], color="#d62728", linewidth=1, label=f"p99 {lat['p99_ms']:.0f} ms")
        right.set_xlabel("s since start")
        right.set_ylabel("produce -> row written (ms)")
        right.set_title(f"Latency at {lat['rate_achieved']}/s, trigger {lat['trigger']}")
        right.legend(loc="upper right", fontsize=8)
    else:
        right.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run_bench(
    settings: SinkSettings,
    *,
    events: int,
    rate: int,
    latency_s: float,
    trigger: str | None = None,
    name: str = "bench_sink",
) -> str:
    """Run the benchmarks (``events=0`` skips throughput, ``latency_s=0`` latency); write
    results/<name>.json and .png; return a summary."""
    tag = uuid.uuid4().hex[:6]
    RESULTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-sink-") as tmp:
        work = Path(tmp)
        result: dict[str, Any] = {}
        if events > 0:
            result["throughput"] = _throughput(settings, events, work, f"{tag}t")
        if latency_s > 0:
            result["latency"] = _latency(
                settings, rate, latency_s, trigger or settings.sink_trigger, work, f"{tag}l"
            )
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    _plot(result, RESULTS / f"{name}.png")
    lines = []
    if "throughput" in result:
        lines += _throughput_lines(result["throughput"])
    if "latency" in result:
        lat = result["latency"]
        lines.append(
            f"latency at {lat['rate_achieved']} events/s, trigger {lat['trigger']}: p50 {lat['p50_ms']} ms, "
            f"p95 {lat['p95_ms']} ms, p99 {lat['p99_ms']} ms, max {lat['max_ms']} ms ({lat['events']} events)"
        )
    lines.append(f"results: {RESULTS / (name + '.json')}, {RESULTS / (name + '.png')}")
    return "\n".join(lines)


def _throughput_lines(thr: dict[str, Any]) -> list[str]:
    return [
        f"sink: {thr['spark']['events_per_s']} events/s = {thr['spark']['rows_per_s']} rows/s "
        f"({thr['spark']['events']} events, {thr['spark']['duplicates_dropped']} duplicates dropped, "
        f"{thr['spark']['seconds']}s)",
        *[
            f"raw insert, {r['processes']} process(es){'' if r['batching'] else ', per row'}: "
            f"{r['events_per_s']} events/s = {r['rows_per_s']} rows/s"
            for r in thr["raw"]
        ],
        f"sink after its first batch (JIT warm-up, connections): "
        f"{thr['spark']['steady_events_per_s']} events/s = {thr['spark']['steady_rows_per_s']} rows/s",
        f"sink / best raw (batched): {thr['spark_vs_best_raw']}x overall, "
        f"{thr['spark_steady_vs_best_raw']}x steady",
    ]
