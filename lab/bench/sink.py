"""``chatlog bench sink``: throughput of the sink next to a raw driver insert.

Throughput: N synthetic Twitch-like events (10% of them produced twice, the copy a few hundred records
after the first, as a second replica's arrives) go into a fresh topic; the sink drains it (available-now
trigger) into a fresh keyspace, twice, in one Spark session: *cold* is the first query of a new JVM
(class loading, code generation and the JIT compiling Spark's hot paths: ``spark_cold`` against
``spark_warm`` in the results shows what that costs), *warm* the next one on a new topic and keyspace, as
a sink that has run for a while is. The same distinct events are then inserted without Spark by the same
writer code in 1 and 2 processes (the sink has 2 Python workers), and per row without batching, into
other fresh keyspaces.
The CPU time of each part (the Spark JVM, the Python workers, Cassandra, Kafka) is reported per
event for the warm run and the raw inserts (:mod:`lab.demo.process_cpu`). Results:
``results/<name>.json`` and ``.png`` (``bench_sink`` by default). The sink's latency and how it catches up
under a load are measured on the whole pipeline by ``chatlog bench capacity`` (:mod:`lab.bench.capacity`).
"""

from __future__ import annotations

import multiprocessing
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypeVar

from lab import extras
from lab.bench.scratch import scratch_keyspaces
from lab.bench.sink_data import fresh, produce, synthetic_events
from lab.demo import process_cpu
from lab.results import RESULTS_DIR, figure, write_json
from schemas.chat_event import encode
from sink.settings import SinkSettings

T = TypeVar("T")


def _raw_worker(args: tuple[SinkSettings, list[bytes]]) -> dict[str, Any]:
    from sink.writer.partition import write_partition

    settings, values = args
    return write_partition(((v, None, None) for v in values), settings).to_dict()


def _raw_insert(settings: SinkSettings, values: list[bytes], processes: int) -> dict[str, Any]:
    """The same rows through the same writer, without Spark, in ``processes`` processes."""
    from sink.job.stream import ensure_schema
    from sink.writer.stats import WriteStats

    ensure_schema(settings)
    parts = [values[i::processes] for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        pool.map(_raw_worker, [(settings, parts[i][:50]) for i in range(processes)])  # connect, prepare
        cpu_before = process_cpu.snapshot()
        start = time.perf_counter()
        results = pool.map(_raw_worker, [(settings, part) for part in parts])
        seconds = time.perf_counter() - start
        cpu_after = process_cpu.snapshot()
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
        "cpu_us_per_event": process_cpu.per_event(cpu_before, cpu_after, total.events),
    }


COPY_SHARE = 1.0
"""Share of the messages that arrive twice: 1.0, every message, as with R = 2 ingester groups."""
COPY_DELAY_RECORDS = 500
"""A copy follows its message by up to this many records: 0.1 s at 5k events/s (copies from the replica
groups arrive within a fraction of a second of each other: `make demo`'s copy skew, docs/benchmarks.md)."""


def with_copies(values: list[T], rng: random.Random, share: float = COPY_SHARE) -> list[T]:
    """``values`` with a second copy of ``share`` of them, each placed up to
    :data:`COPY_DELAY_RECORDS` records after its first copy, as a second replica's copy arrives."""
    slots: list[list[T]] = [[v] for v in values]
    for i, value in enumerate(values):
        if rng.random() < share:
            slots[min(len(values) - 1, i + rng.randint(1, COPY_DELAY_RECORDS))].append(value)
    return [v for slot in slots for v in slot]


def _sink_run(
    settings: SinkSettings, values: list[tuple[bytes, bytes]], work: Path, tag: str
) -> dict[str, Any]:
    """Drain ``values`` from a fresh topic into a fresh keyspace with the sink (available-now trigger)."""
    from sink.job import stream
    from sink.job.session import get_session

    with fresh(settings, tag, work) as s:
        produce_s = produce(s, values)
        get_session(s)
        cpu_before = process_cpu.snapshot()
        start = time.perf_counter()
        totals = stream.run(s.model_copy(update={"sink_max_offsets_per_trigger": 50_000}), available_now=True)
        seconds = time.perf_counter() - start
        cpu_after = process_cpu.snapshot()
    steady = [r for r in totals.reports[1:] if r.written.events]
    steady_s = sum(r.duration_s for r in steady)
    steady_events = sum(r.written.events for r in steady)
    steady_rows = sum(r.written.rows_total for r in steady)
    return {
        "produce_seconds": round(produce_s, 2),
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
        "cpu_us_per_event": process_cpu.per_event(cpu_before, cpu_after, totals.written.events),
    }


def _throughput(
    settings: SinkSettings, events: int, work: Path, tag: str, copy_share: float
) -> dict[str, Any]:
    """The sink twice in one Spark session (cold: the first query of a new JVM; warm: the next one,
    as a long-running sink is), then the raw insert of the same distinct events."""
    distinct = synthetic_events(events)
    values = [(e.channel.encode(), encode(e)) for e in distinct]
    produced = with_copies(values, random.Random(3), copy_share)
    cold = _sink_run(settings, produced, work, f"{tag}c")
    warm = _sink_run(settings, produced, work, f"{tag}w")
    raw_values = [v for _k, v in values]
    raw: list[dict[str, Any]] = []
    with fresh(settings, f"{tag}r", work) as s:
        one, two, per_row_ks = (f"{s.cassandra_keyspace}{suffix}" for suffix in ("1", "2", "row"))
        with scratch_keyspaces(s, one, two, per_row_ks):
            for processes, ks in ((1, one), (2, two)):
                raw.append(
                    _raw_insert(s.model_copy(update={"cassandra_keyspace": ks}), raw_values, processes)
                )
            per_row = s.model_copy(
                update={
                    "cassandra_keyspace": per_row_ks,
                    "sink_batch_max_rows": 1,
                    "sink_write_concurrency": 128,
                }
            )
            raw.append(_raw_insert(per_row, raw_values[: min(len(raw_values), 30_000)], 2))
    best = max(r["rows_per_s"] for r in raw if r["batching"])
    return {
        "events_distinct": events,
        "copy_share": copy_share,
        "records_produced": len(produced),
        "spark_cold": cold,
        "spark_warm": warm,
        "raw": raw,
        "warm_vs_best_raw": round(warm["rows_per_s"] / best, 2),
        "cold_vs_best_raw": round(cold["rows_per_s"] / best, 2),
    }


def _plot(result: dict[str, Any], path: Path) -> None:
    thr = result["throughput"]
    with figure(path, figsize=(6, 3.6), dpi=80) as (_fig, ax):
        labels = ["sink cold", "sink warm"] + [
            f"raw {r['processes']}p{' per row' if not r['batching'] else ''}" for r in thr["raw"]
        ]
        values = [thr["spark_cold"]["rows_per_s"], thr["spark_warm"]["rows_per_s"]] + [
            r["rows_per_s"] for r in thr["raw"]
        ]
        ax.bar(labels, values, color=["#d62728", "#ff7f0e"] + ["#1f77b4"] * len(thr["raw"]))
        ax.set_ylabel("Cassandra rows/s")
        ax.set_title("Throughput (same rows)")
        ax.tick_params(axis="x", labelsize=7)


def run_bench(
    settings: SinkSettings,
    *,
    events: int,
    name: str = "bench_sink",
    copy_share: float = COPY_SHARE,
) -> str:
    """Run the throughput benchmark with ``events`` distinct events; write results/<name>.json and .png;
    return a summary."""
    extras.require_plotting()
    extras.require_cpu_accounting()
    tag = uuid.uuid4().hex[:6]
    with tempfile.TemporaryDirectory(prefix="bench-sink-") as tmp:
        result = {"throughput": _throughput(settings, events, Path(tmp), f"{tag}t", copy_share)}
    json_path = write_json(RESULTS_DIR / f"{name}.json", result, indent=1)
    _plot(result, json_path.with_suffix(".png"))
    lines = _throughput_lines(result["throughput"])
    lines.append(f"results: {json_path}, {json_path.with_suffix('.png')}")
    return "\n".join(lines)


def _throughput_lines(thr: dict[str, Any]) -> list[str]:
    def sink(run: dict[str, Any]) -> str:
        return (
            f"{run['events_per_s']} events/s = {run['rows_per_s']} rows/s ({run['events']} events, "
            f"{run['duplicates_dropped']} duplicates dropped, {run['seconds']}s; after the first batch "
            f"{run['steady_rows_per_s']} rows/s)"
        )

    def raw(r: dict[str, Any]) -> str:
        return f"raw insert, {r['processes']} process(es){'' if r['batching'] else ', per row'}"

    return [
        f"sink, cold (first query of a new JVM): {sink(thr['spark_cold'])}",
        f"sink, warm (next query, same JVM): {sink(thr['spark_warm'])}",
        *[f"{raw(r)}: {r['events_per_s']} events/s = {r['rows_per_s']} rows/s" for r in thr["raw"]],
        process_cpu.line("sink, warm:", thr["spark_warm"]["cpu_us_per_event"]),
        *[
            process_cpu.line(f"{raw(r)}:", r["cpu_us_per_event"], ("python_workers", "cassandra", "bench"))
            for r in thr["raw"]
        ],
        f"sink / best raw (batched): {thr['warm_vs_best_raw']}x warm, {thr['cold_vs_best_raw']}x cold",
    ]
