"""``chatlog bench capacity``: the demo's pipeline (simulated chat, two replica groups of ingesters, the sink,
``chatlog serve`` polled over HTTP) at rising rates, and the highest rate it sustains on this machine.

One run (:func:`lab.demo.run.execute_run`): every channel joined and the sink warmed, the pipeline
measured at rest for :data:`AT_REST_S`, then the simulator steps through the rates, :data:`STEP_S` each.
Each step is measured over its last ``step - settle`` seconds (the first ``settle`` let the sink reach the
new rate): the CPU of every part per message sent in the window (their processes' CPU time, taken at the
window's ends), the e2e latency over HTTP of the messages sent in it (IRC send -> visible in
``/api/v2/recent-messages``), the sink's write lag, the messages lost, and whether the Kafka lag of the sink
grew. A step is *sustained* when nothing sent in it was lost, its api e2e p99 is at most
:data:`E2E_P99_GOAL_S`, and the sink's lag at its end is no more than :data:`LAG_GROWTH_S` of traffic above
its lag at the window's start. The machine's capacity is the highest rate sustained with every lower one
sustained too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from core.settings import StackSettings
from lab import extras
from lab.demo import process_cpu
from lab.demo.report import Spread
from lab.demo.run import Run, RunConfig, execute_run
from lab.results import RESULTS_DIR, figure, write_json

RATES: Final = (1000.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0)
STEP_S: Final = 180.0
SETTLE_S: Final = 60.0
AT_REST_S: Final = 60.0
E2E_P99_GOAL_S: Final = 1.0
PIPELINE_GOAL_US: Final = 350.0
LAG_GROWTH_S: Final = 15.0
"""A step's sink lag may end at most this many seconds of its traffic above where it started (one or two
micro-batches: the lag saws up and down with each batch)."""


def _window(points: list[tuple[float, float]], lo: float, hi: float) -> list[float]:
    return [value for at, value in points if lo <= at < hi]


def step_report(run: Run, rate: float, lo: float, hi: float, marks: tuple[Any, Any]) -> dict[str, Any]:
    """One step's figures over its window ``[lo, hi)`` (seconds since the run's t0)."""
    (_a, busy0, before), (_b, busy1, after) = marks
    seconds = hi - lo
    sent = sum(1 for at in run.sent_points if lo <= at < hi)
    totals = process_cpu.spent(before, after)
    per_msg = {part: round(totals[part] / max(sent, 1) * 1e6, 1) for part in process_cpu.PIPELINE}
    pipeline = round(sum(per_msg[p] for p in process_cpu.PIPELINE_PARTS), 1)
    api = Spread.of(_window(run.e2e_points, lo, hi))
    write = Spread.of(_window(run.write_points, lo, hi))
    lost = sum(1 for at in run.lost_points if lo <= at < hi)
    lag = [(at, n) for at, n in run.timeline.lag if lo <= at < hi]
    lag_start = min((n for _, n in lag[: max(1, len(lag) // 10)]), default=0)
    lag_end = min((n for _, n in lag[-max(1, len(lag) // 10) :]), default=0)
    growing = lag_end - lag_start > rate * 2 * LAG_GROWTH_S  # records: two copies of each message
    sustained = lost == 0 and api is not None and api.p99 <= E2E_P99_GOAL_S and not growing
    return {
        "rate": rate,
        "window_s": [round(lo, 1), round(hi, 1)],
        "sent": sent,
        "sent_per_s": round(sent / seconds, 1),
        "lost": lost,
        "api_e2e_s": None if api is None else {"p50": api.p50, "p99": api.p99, "n": api.n},
        "write_lag_s": None if write is None else {"p50": write.p50, "p99": write.p99},
        "sink_lag_records": {"start": lag_start, "end": lag_end, "growing": growing},
        "cpu_us_per_msg": per_msg,
        "pipeline_us_per_msg": pipeline,
        "pipeline_cores": round(pipeline * sent / seconds / 1e6, 3),
        "machine_cores": round((busy1 - busy0) / seconds, 3),
        "sustained": sustained,
    }


def capacity(
    settings: StackSettings,
    rates: tuple[float, ...] = RATES,
    step_s: float = STEP_S,
    settle_s: float = SETTLE_S,
    channels: int = 500,
    out_dir: Path = RESULTS_DIR,
) -> dict[str, Any]:
    """Run the steps (module doc) and write ``bench_capacity.json`` and ``.png``; returns the result."""
    extras.require_plotting()
    extras.require_cpu_accounting()
    schedule = [(rate, step_s) for rate in rates]
    marks = [t for i in range(len(rates)) for t in (i * step_s + settle_s, (i + 1) * step_s)]
    config = RunConfig(
        name="bench-capacity",
        channels=channels,
        rate=rates[0],
        duration=step_s * len(rates),
        schedule=schedule,
        at_rest_s=AT_REST_S,
        cpu_marks=marks,
        drain_timeout_s=300.0,
        results_dir=None,
    )
    run, rep = execute_run(settings, config, None)
    start = run.events.get("traffic starts", 0.0)
    taken = {mark: (mark, busy, snap) for mark, busy, snap in run.marks}
    steps = []
    for i, rate in enumerate(rates):
        lo, hi = i * step_s + settle_s, (i + 1) * step_s
        if lo in taken and hi in taken:
            steps.append(step_report(run, rate, start + lo, start + hi, (taken[lo], taken[hi])))
    sustained = 0.0
    for step in steps:
        if not step["sustained"]:
            break
        sustained = step["rate"]
    floors = compare_floors(run, steps)
    result = {
        "bench": "capacity",
        "sustained_msgs_per_s": sustained,
        "goal": {
            "msgs_per_s": 8000,
            "pipeline_us_per_msg": PIPELINE_GOAL_US,
            "api_e2e_p99_s": E2E_P99_GOAL_S,
        },
        "at_rest_cores": run.at_rest,
        "floors": floors,
        "steps": steps,
        "run": {"summary": rep.line(), "channels": channels, "step_s": step_s, "settle_s": settle_s},
        "replicas": 2,
        "note": "one run: 2 replica groups of 2 ingesters, the sink (local[2]), chatlog serve polled "
        "every 0.5 s for 4 sample channels, the simulator and InspIRCd, all on this machine; each step "
        "measured over its last step_s - settle_s seconds; cpu_us_per_msg per message sent in the window, "
        "by the CPU time of "
        "each part's processes; pipeline = ingesters + kafka + sink_driver + spark_jvm + python_workers + "
        "cassandra + serve",
    }
    write_json(out_dir / "bench_capacity.json", result, indent=1)
    plot(result, out_dir / "bench_capacity.png")
    print(json.dumps({"sustained_msgs_per_s": sustained, "at_rest_cores": run.at_rest.get("pipeline")}))
    return result


def compare_floors(run: Run, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The floors of Kafka and Cassandra on the run's own records and rows (:mod:`lab.bench.floors`): each
    step beside the raw library doing its work at its rate, and the bulk floors."""
    from core.settings import load
    from lab.bench import floors as f
    from lab.bench.serve import serving
    from sink.settings import SinkSettings

    every = load(SinkSettings).trigger_ms / 1000
    records, partitions = f.taken_records(run.settings, run.settings.topic_messages)
    written = f.written_rows(run.settings, run.settings.cassandra_keyspace)
    indexed = f.with_index_rows(written)
    channels = run.probe.channels if run.probe is not None else []
    # the step's reads again: chatlog serve on the run's keyspace, as the run started it
    with serving(run.settings.cassandra_keyspace, env={**run.env(), "CHATLOG_SERVE_WORKERS": "1"}) as server:
        for step in steps:
            rate = step["sent_per_s"]
            lo, hi = (run.t0 + at for at in step["window_s"])
            rounds = f.rounds_of(indexed, lo, hi, gap_s=every / 2)
            rows = sum(len(r) for r in rounds)
            blocks = sum(1 for r in rounds for row in r if row.table in f.BLOCK_TABLES)
            # two records a message at R = 2
            kafka = f.kafka_floor_at(run.settings, records, partitions, 2 * rate)
            reads = f.serve_polls(server.base, channels, lo, hi) if channels else None
            writes_only = f.cassandra_floor_at(run.settings, rounds, every)
            cassandra = f.cassandra_floor_at(run.settings, rounds, every, reads=reads)
            per_record = step["cpu_us_per_msg"]["kafka"] / 2
            per_row = step["cpu_us_per_msg"]["cassandra"] * step["sent"] / max(rows, 1)
            step["rows"] = {
                "written": rows,
                "blocks": blocks,
                "index": rows - blocks,
                "per_s": round(rows / (hi - lo), 1),
                "rounds": len(rounds),
            }
            step["floors_at_rate"] = {
                "kafka": kafka,
                "cassandra": cassandra,
                "cassandra_writes_only": writes_only,
            }
            step["kafka_us_per_record"] = round(per_record, 2)
            step["kafka_vs_floor"] = round(per_record / max(kafka["us_per_record"], 1e-9), 2)
            step["cassandra_us_per_row"] = round(per_row, 2)
            step["cassandra_vs_floor"] = round(per_row / max(cassandra["us_per_row"] or 0, 1e-9), 2)
    sample = written[:: max(1, len(written) // f.BULK_ROWS)][: f.BULK_ROWS]
    return {
        "kafka_bulk": f.kafka_floor(run.settings, records, partitions),
        "cassandra_bulk": f.cassandra_floor(run.settings, sample),
        "block_rows": {table: sum(1 for w in written if w.table == table) for table in f.BLOCK_TABLES},
        "note": "each step's *_vs_floor: the server's whole CPU per record (Kafka: the ingesters' "
        "produces, the sink's and serve's fetches, the control topics, idle work) or per block and index "
        "row written in the step (Cassandra: writes of blocks, index and name rows, flushes, compactions, "
        "serve's reads) against the same server's while the raw library does the step's work at the "
        "step's rate (floors_at_rate: the run's records from as many raw producers with the ingesters' "
        "settings and one raw consumer; the block rows the sink wrote in the step, both tables, and their "
        "index rows, in the rounds it wrote them, in unlogged batches cut as the sink cuts them, once no "
        "compaction runs, while chatlog serve answers the e2e probe's polls of the step again), the median "
        "of 4 windows, JIT compilers left out on both sides; *_bulk: the "
        "same records and a sample of the block rows at once, the server's marginal cost of one",
    }


def plot(result: dict[str, Any], path: Path) -> None:
    """CPU per message by part (stacked) and api e2e p50/p99 against the rate."""
    steps = result["steps"]
    if not steps:
        return
    labels = [f"{s['rate']:g}" for s in steps]
    with figure(path, 2, 1, figsize=(9, 8)) as (fig, (cpu_ax, e2e_ax)):
        bottom = [0.0] * len(steps)
        for part in process_cpu.PIPELINE_PARTS:
            values = [s["cpu_us_per_msg"][part] for s in steps]
            cpu_ax.bar(labels, values, bottom=bottom, label=part)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        cpu_ax.axhline(PIPELINE_GOAL_US, color="black", linestyle="--", linewidth=1, label="goal")
        cpu_ax.set_ylabel("pipeline CPU µs per message")
        cpu_ax.set_title(
            f"chatlog bench capacity: sustained {result['sustained_msgs_per_s']:g} msg/s at R = 2"
        )
        cpu_ax.legend(fontsize=7, ncol=4)
        for quantile in ("p50", "p99"):
            values = [(s["api_e2e_s"] or {}).get(quantile) for s in steps]
            e2e_ax.plot(labels, values, marker="o", label=f"api e2e {quantile}")
        e2e_ax.axhline(E2E_P99_GOAL_S, color="black", linestyle="--", linewidth=1)
        e2e_ax.set_xlabel("messages per second sent")
        e2e_ax.set_ylabel("send -> visible over HTTP (s)")
        e2e_ax.legend(fontsize=8)
        fig.tight_layout()
