"""``chatlog bench report``: docs/benchmarks.md written from the result files in results/ (figures made,
not typed).

The page is its template, ``docs/benchmarks.md.in`` (the prose: how each benchmark measures, what the
figures mean), with its placeholders filled from the results:

* ``{{ notice }}``: the line saying the page is generated and from what;
* ``{{ table }}``: one row per benchmark of :data:`BENCHMARKS`: what it measures, its latest figures and
  goals, the command that makes its result file, and the files (the JSON and its plot);
* ``{{ figures NAME }}``: more figures of benchmark NAME, for the method's prose around it.

Each result file is read defensively: a file that is missing or not JSON, or a key that is not there,
is ``n/a`` in the page, never an error (a benchmark that changes its JSON shows up as ``n/a``, and the
unit test that compares the committed page with this output fails until the page is made again).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Final

RESULTS: Final = Path("results")
TEMPLATE: Final = Path("docs/benchmarks.md.in")
PAGE: Final = Path("docs/benchmarks.md")
COMMAND: Final = "chatlog bench report"
X: Final = "\N{MULTIPLICATION SIGN}"
EN: Final = "\N{EN DASH}"
NA: Final = "n/a"
"""What a figure reads when its result file or its key is missing."""


class View:
    """A value inside a result file; indexing a missing key, a list out of range or a missing file gives
    a view of nothing (``None``), so a lookup never raises and a figure of nothing is :data:`NA`."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, *path: str | int) -> View:
        value = self.value
        for key in path:
            if isinstance(key, int) and isinstance(value, list) and -len(value) <= key < len(value):
                value = value[key]
            elif isinstance(key, str) and isinstance(value, dict):
                value = value.get(key)
            else:
                return View(None)
        return View(value)

    def number(self) -> float | None:
        """The value when it is a finite number (not a boolean), else None."""
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    def each(self) -> list[View]:
        """The items of a list (nothing when the value is not one)."""
        return [View(item) for item in self.value] if isinstance(self.value, list) else []

    def items(self) -> list[tuple[str, View]]:
        """The entries of an object (nothing when the value is not one)."""
        return [(str(k), View(v)) for k, v in self.value.items()] if isinstance(self.value, dict) else []

    def text(self) -> str:
        """The value as text: a string as it is, a number formatted, else :data:`NA`."""
        if isinstance(self.value, str):
            return self.value
        return fixed(self.number(), 0, grouped=True) if self.number() is not None else NA

    def f(
        self,
        digits: int = 1,
        *,
        scale: float = 1.0,
        grouped: bool = False,
        unit: str = "",
        trim: bool = False,
    ) -> str:
        """The number times ``scale`` with ``digits`` decimals (half up), then ``unit``; or :data:`NA`.
        ``trim`` drops the decimals when they are zeros (125.0 -> 125)."""
        n = self.number()
        if n is None:
            return NA
        text = fixed(n * scale, digits, grouped=grouped)
        if trim and "." in text:
            text = text.rstrip("0").rstrip(".")
        return text + unit

    def k(self, digits: int = 0) -> str:
        """Thousands: 267263 -> ``267k`` (``digits`` 0), 99649 -> ``99.6k`` (``digits`` 1)."""
        return self.f(digits, scale=1e-3, unit="k")

    def ms_as_s(self, digits: int = 2) -> str:
        """Milliseconds as seconds: 1670.8 -> ``1.67``."""
        return self.f(digits, scale=1e-3)


def fixed(n: float | None, digits: int, *, grouped: bool = False) -> str:
    """``n`` rounded half up to ``digits`` decimals (as one rounds by hand: 1.215 -> 1.22), with thousands
    separators when ``grouped``; :data:`NA` for None."""
    if n is None:
        return NA
    exponent = Decimal(1).scaleb(-digits)
    rounded = Decimal(repr(n)).quantize(exponent, rounding=ROUND_HALF_UP)
    return f"{rounded:,}" if grouped else f"{rounded}"


def verdict(ok: bool | None) -> str:
    """``met``, ``missed``, or :data:`NA` when a figure it needs is missing."""
    return NA if ok is None else ("met" if ok else "missed")


def at_most(value: View, limit: float) -> bool | None:
    n = value.number()
    return None if n is None else n <= limit


def at_least(value: View, limit: float) -> bool | None:
    n = value.number()
    return None if n is None else n >= limit


def against(check: Callable[[View, float], bool | None], value: View, goal: View) -> bool | None:
    """``check`` (:func:`at_most`, :func:`at_least`) of ``value`` with the goal a result file states; None
    when it states none."""
    limit = goal.number()
    return None if limit is None else check(value, limit)


def span(values: Iterable[View], digits: int = 2, sep: str = "-") -> str:
    """The smallest and largest of ``values`` (``1.30-1.39``), one value alone, or :data:`NA`."""
    numbers = [n for n in (v.number() for v in values) if n is not None]
    if not numbers:
        return NA
    low, high = fixed(min(numbers), digits), fixed(max(numbers), digits)
    return low if low == high else f"{low}{sep}{high}"


def largest(values: Iterable[View]) -> View:
    """The largest number of ``values`` (a view of nothing when there is none)."""
    numbers = [n for n in (v.number() for v in values) if n is not None]
    return View(max(numbers) if numbers else None)


class Result(View):
    """One result file of results/: its name and its JSON document (nothing when missing or unreadable)."""

    __slots__ = ("name", "plot", "problem")

    def __init__(self, name: str, value: Any, *, plot: str | None = None, problem: str | None = None) -> None:
        super().__init__(value)
        self.name = name
        self.plot = plot
        self.problem = problem

    @classmethod
    def read(cls, results: Path, name: str) -> Result:
        """``results/name`` parsed; its plot (the PNG of the same name) when there is one."""
        path = results / name
        png = path.with_suffix(".png")
        plot = png.name if png.is_file() else None
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(name, None, plot=plot, problem="no result file")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return cls(name, None, plot=plot, problem=f"unreadable: {type(exc).__name__}")
        if not isinstance(value, dict):
            return cls(name, None, plot=plot, problem="not a JSON object")
        return cls(name, value, plot=plot)


@dataclass(frozen=True)
class Benchmark:
    """One row of the page's table, and the figures its method's prose quotes."""

    key: str
    """Its name in ``{{ figures KEY }}``."""
    title: str
    measures: str
    command: str
    result: str
    """The JSON file under results/."""
    headline: Callable[[Result], str]
    goal: Callable[[Result], str]
    figures: Callable[[Result], str] | None = None


def _none(_: Result) -> str:
    return "—"


# -- parser, ingester, IRC read path -------------------------------------------------------------------------


def _parse(r: Result) -> str:
    rates = r("lines_per_s")
    return (
        f"{rates('parse').k()} lines per CPU-second; {rates('parse_encode').k()} with the JSON encoding; "
        f"the `irc` package {rates('irc_event').k()}"
    )


def _parse_goal(r: Result) -> str:
    goal = r("goal_lines_per_s")
    return f"≥ {goal.k()}/s: {verdict(against(at_least, r('lines_per_s', 'parse'), goal))}"


def _parse_figures(r: Result) -> str:
    rates = r("lines_per_s")
    equal, size = r("corpus", "irc_event_equal_to_ours"), r("corpus", "size")
    on = f"all {size.text()}" if equal.value == size.value else f"{equal.text()} of the {size.text()}"
    return (
        f"Parse {rates('parse').k()} lines/s ({r('us_per_line', 'parse').f(2)} µs a line), parse + JSON "
        f"encode {rates('parse_encode').k()}; the `irc` package: framing alone {rates('irc_framing').k()}, "
        f"framing and event {rates('irc_event').k()} (its events equal ours on {on} lines)."
    )


def _codec(r: Result, codec: str) -> View:
    return next((p for p in r("raw_producer").each() if p("codec").value == codec), View(None))


def _ingest(r: Result) -> str:
    return (
        f"{r('ingest', 'events_per_s').k(1)} events/s acknowledged by Kafka; the raw producer (zstd) "
        f"{_codec(r, 'zstd')('events_per_s').k()}/s: {r('ingest_vs_raw').f(2)}{X}"
    )


def _ingest_goal(r: Result) -> str:
    rate, ratio = r("goal", "events_per_s"), r("goal", "vs_raw")
    rate_ok = against(at_least, r("ingest", "events_per_s"), rate)
    ratio_ok = against(at_least, r("ingest_vs_raw"), ratio)
    return f"≥ {rate.k()}/s: {verdict(rate_ok)}; ≥ {ratio.f(1)}{X}: {verdict(ratio_ok)}"


def _ingest_figures(r: Result) -> str:
    zstd, lz4, none = (_codec(r, c) for c in ("zstd", "lz4", "none"))
    return (
        f"{r('ingest', 'events_per_s').k(1)} events/s ({r('ingest', 'cpu_us_per_event').f(1)} µs of ingester "
        f"CPU per event); the raw producer with zstd {zstd('events_per_s').k()}/s (lz4 "
        f"{lz4('events_per_s').k()}/s, none {none('events_per_s').k()}/s): {r('ingest_vs_raw').f(2)}{X}. On "
        "the "
        f"wire zstd makes the events {zstd('compression_ratio').f(1)}{X} smaller, lz4 "
        f"{lz4('compression_ratio').f(1)}{X}."
    )


def _irc(r: Result) -> str:
    return (
        f"one pool connection {r('pool', 'lines_per_s').k()} lines/s; the `irc` package's reactor "
        f"{r('irc_package', 'lines_per_s').k(1)} ({r('pool_vs_irc_package').f(1)}{X})"
    )


def _irc_figures(r: Result) -> str:
    return (
        f"{r('pool', 'lines_per_s').k()} lines/s ({r('pool', 'lines_per_cpu_s').k()} per CPU-second; the "
        f"line reader alone {r('reader_only', 'lines_per_s').k()}); the `irc` package's asyncio reactor on "
        f"the same corpus {r('irc_package', 'lines_per_s').k(1)}: {r('pool_vs_irc_package').f(1)}{X}."
    )


# -- membership and placement --------------------------------------------------------------------------------


def _rebalance(r: Result) -> str:
    kill, share = r("kill_to_all_confirmed_s"), r("start_to_share_confirmed_s")
    return (
        f"kill -9 → all channels confirmed again: median {kill('median').f(1)} s (max {kill('max').f(1)}); "
        f"a new worker's share confirmed: median {share('median').f(1)} s"
    )


def _rebalance_goal(r: Result) -> str:
    goal = r("goal_kill_to_all_confirmed_s")
    ok = against(at_most, r("kill_to_all_confirmed_s", "max"), goal)
    return f"≤ {goal.f(0)} s (every round): {verdict(ok)}"


def _rebalance_figures(r: Result) -> str:
    kill, share = r("kill_to_all_confirmed_s"), r("start_to_share_confirmed_s")
    channels = span((round_("share_channels") for round_ in r("rounds").each()), 0, EN)
    return (
        f"{r('channels').text()} channels, {r('buckets').text()} buckets, {r('workers').text()} ingesters "
        f"(JOIN limit {r('join_rate_per_10s').text()} per 10 s each), group protocol "
        f"`{r('group_protocol').text()}`, broker session timeout {r('broker_session_timeout_s').text()} s; "
        f"{len(r('rounds').each())} rounds of kill -9 of one ingester and the start of a new one. Kill → "
        f"every channel confirmed again: median {kill('median').f(2)} s, max {kill('max').f(2)} s; the new "
        f"worker's share ({channels} channels) confirmed: median {share('median').f(2)} s."
    )


def _scale_runs(r: Result) -> str:
    runs = r("runs").each()
    parts = []
    for i, run in enumerate(runs):
        channels = run("channels").k()
        took, bound = run("confirm_all_s").f(1), run("bound_by_join_rate_s").f(1, trim=True)
        if i == 0:
            parts.append(f"{channels} channels confirmed in {took} s (JOIN-rate bound {bound} s)")
        else:
            parts.append(f"{channels} in {took} s ({bound})")
    return ", ".join(parts) or NA


def _scale_busiest(r: Result) -> View:
    """The run with the most channels per ingester."""
    runs = r("runs").each()
    return max(runs, key=lambda run: run("channels_per_worker").number() or 0, default=View(None))


def _scale(r: Result) -> str:
    busiest = _scale_busiest(r)
    return (
        f"{r('runs', 0, 'workers').text()} ingesters: {_scale_runs(r)}; RSS ≤ "
        f"{busiest('rss_mib_max').f(0)} MiB per ingester at {busiest('channels_per_worker').k()} channels"
    )


SCALE_GOAL_MB: Final = 300
"""RSS of one ingester at 25k channels, at most (MB)."""


def _scale_goal(r: Result) -> str:
    at_25k = [run for run in r("runs").each() if (run("channels_per_worker").number() or 0) >= 25_000]
    mib = [run("rss_mib_max").number() for run in at_25k]
    ok = None if not mib or None in mib else all(m * 1.048576 <= SCALE_GOAL_MB for m in mib if m is not None)
    return f"≤ {SCALE_GOAL_MB} MB per 25k channels: {verdict(ok)}"


def _scale_figures(r: Result) -> str:
    busiest = _scale_busiest(r)
    runs = [
        f"{run('channels').k()} channels {run('confirm_all_s').f(1)} s "
        f"({run('bound_by_join_rate_s').f(1, trim=True)})"
        for run in r("runs").each()
    ]
    return (
        f"{', '.join(runs) or NA}; RSS at most {busiest('rss_mib_max').f(0)} MiB per ingester at "
        f"{busiest('channels_per_worker').k()} channels each."
    )


def _placement(r: Result) -> str:
    by_seed = r("per_connection_max_over_mean_by_seed")
    return (
        f"max/mean msg/s per connection {span(by_seed('after_placement').each(), 2, EN)} placing by load "
        f"({span(by_seed('before_count_packing').each(), 2, EN)} by count); "
        f"{span(r('moves_per_hour_by_seed').each(), 0, EN)} moves per hour; "
        f"{r('messages_lost_during_moves_all_seeds').text()} lost"
    )


def _placement_goal(r: Result) -> str:
    goal = r("goal_max_over_mean_per_connection")
    worst = largest(r("per_connection_max_over_mean_by_seed", "after_placement").each())
    return f"≤ {goal.f(1)}: {verdict(against(at_most, worst, goal))}"


def _placement_figures(r: Result) -> str:
    by_seed = r("per_connection_max_over_mean_by_seed")
    before = ", ".join(v.f(2) for v in by_seed("before_count_packing").each()) or NA
    after = ", ".join(v.f(2) for v in by_seed("after_placement").each()) or NA
    return (
        f"Max/mean msg/s per connection: {before} packing by count; {after} placing by load (goal ≤ "
        f"{r('goal_max_over_mean_per_connection').f(1)}); {span(r('moves_per_hour_by_seed').each(), 0, EN)} "
        f"moves per hour; {r('messages_lost_during_moves_all_seeds').text()} messages lost during moves (the "
        "overlap's duplicates are the sink's to drop)."
    )


# -- sink ----------------------------------------------------------------------------------------------------

SINK_GOAL_VS_RAW: Final = 0.7
_PARTS: Final = {
    "spark_jvm": "Spark JVM",
    "python_workers": "Python workers",
    "cassandra": "Cassandra",
    "kafka": "Kafka",
    "bench": "the bench",
    "ingesters": "ingesters",
    "demo": "the demo",
    "sink_driver": "sink driver",
    "irc_server": "IRC server",
    "simulator": "simulator",
    "serve": "serve",
    "jvm_jit": "the JVMs' JIT compilers",
}


def _best_raw(r: Result) -> View:
    return largest(raw("rows_per_s") for raw in r("throughput", "raw").each())


def _sink_cpu(r: Result, run: str = "spark_warm") -> tuple[str, str]:
    """The CPU per stored event of a run: its total and its parts but the bench's own."""
    parts = r("throughput", run, "cpu_us_per_event").items()
    numbers = [v.number() for _, v in parts]
    total = sum(n for n in numbers if n is not None) if parts and None not in numbers else None
    split = ", ".join(f"{_PARTS.get(k, k)} {v.f(1)}" for k, v in parts if k != "bench") or NA
    return fixed(total, 1), split


def _sink(r: Result) -> str:
    warm = r("throughput", "spark_warm")
    total, split = _sink_cpu(r)
    return (
        f"warm {warm('rows_per_s').f(0, grouped=True)} rows/s ({warm('events_per_s').f(0, grouped=True)} "
        f"events/s) = {r('throughput', 'warm_vs_best_raw').f(2)}{X} the best raw insert of its run "
        f"({_best_raw(r).f(0, grouped=True)} rows/s); {total} µs of CPU per stored event ({split})"
    )


def _sink_goal(r: Result) -> str:
    raw_ok = at_least(r("throughput", "warm_vs_best_raw"), SINK_GOAL_VS_RAW)
    return f"≥ {SINK_GOAL_VS_RAW}{X} raw: {verdict(raw_ok)}"


def _sink_figures(r: Result) -> str:
    warm = r("throughput", "spark_warm")
    total, split = _sink_cpu(r)
    return (
        f"warm {warm('events_per_s').f(0, grouped=True)} events/s = {warm('rows_per_s').f(0, grouped=True)} "
        f"rows/s, {r('throughput', 'warm_vs_best_raw').f(2)}{X} the best raw insert of its run "
        f"({_best_raw(r).f(0, grouped=True)} rows/s); CPU per stored event, warm: {split} ({total} with the "
        "bench)."
    )


# -- pipeline and demo ---------------------------------------------------------------------------------------


def _steps(r: Result) -> list[View]:
    return r("steps").each()


def _by_part(us_per_msg: View, digits: int, top: int | None = None) -> str:
    """CPU µs per message by part, the largest first (``top`` of them), the parts that spent none left out."""
    parts = [(k, v) for k, v in us_per_msg.items() if (v.number() or 0) > 0]
    parts.sort(key=lambda kv: -(kv[1].number() or 0))
    return ", ".join(f"{_PARTS.get(k, k)} {v.f(digits)}" for k, v in parts[:top]) or NA


def _capacity(r: Result) -> str:
    cells = []
    for i, step in enumerate(_steps(r)):
        api = step("api_e2e_s")
        rate = step("rate").f(0, grouped=True) + (" msg/s" if i == 0 else "")
        cells.append(
            f"{rate}: {step('pipeline_us_per_msg').f(0)} µs, p99 {api('p99').f(2)} s"
            + ("" if step("sustained").value is True else " (not sustained)")
        )
    return (
        f"sustained {r('sustained_msgs_per_s').f(0, grouped=True)} msg/s at R = 2; pipeline CPU per message "
        f"and api e2e p99 per step: {'; '.join(cells) or NA}"
    )


def _capacity_goal(r: Result) -> str:
    goal = r("goal")
    rate_ok = against(at_least, r("sustained_msgs_per_s"), goal("msgs_per_s"))
    limit = goal("pipeline_us_per_msg").number()
    sustained = [s for s in _steps(r) if s("sustained").value is True]
    cpu = [s("pipeline_us_per_msg").number() for s in sustained]
    cpu_ok = None if limit is None or not cpu or None in cpu else all((c or 0) <= limit for c in cpu)
    return (
        f"≥ {goal('msgs_per_s').f(0, grouped=True)} msg/s: {verdict(rate_ok)}; ≤ "
        f"{goal('pipeline_us_per_msg').f(0)} µs per message where sustained: {verdict(cpu_ok)}"
    )


def _capacity_figures(r: Result) -> str:
    cells = []
    for step in _steps(r):
        api, lag = step("api_e2e_s"), step("write_lag_s")
        cells.append(
            f"{step('rate').f(0, grouped=True)}/s (sent {step('sent_per_s').f(0, grouped=True)}/s, "
            f"{step('lost').text()} lost): api e2e p50/p99 {api('p50').f(2)}/{api('p99').f(2)} s, write lag "
            f"p99 {lag('p99').f(1)} s, sink lag growing: "
            f"{'yes' if step('sink_lag_records', 'growing').value is True else 'no'}; pipeline "
            f"{step('pipeline_us_per_msg').f(1)} µs per message "
            f"({_by_part(step('cpu_us_per_msg'), 1, 4)}), the machine {step('machine_cores').f(2)} cores; "
            f"against the raw library at this rate Kafka {step('kafka_vs_floor').f(2)}x "
            f"({step('kafka_us_per_record').f(1)} against "
            f"{step('floors_at_rate', 'kafka', 'us_per_record').f(1)} "
            f"µs per record), Cassandra {step('cassandra_vs_floor').f(2)}x "
            f"({step('cassandra_us_per_row').f(0)} against "
            f"{step('floors_at_rate', 'cassandra', 'us_per_row').f(0)} µs per row, "
            f"{step('rows', 'per_s').f(1)} block and index rows/s)"
        )
    return (
        f"Sustained {r('sustained_msgs_per_s').f(0, grouped=True)} msg/s; at rest the pipeline takes "
        f"{r('at_rest_cores', 'pipeline').f(2)} cores. Per step: {'; '.join(cells) or NA}."
    )


DEMO_GOAL_P50_S: Final = 1.0
DEMO_GOAL_P99_S: Final = 2.0


def _demo_parts(r: Result, digits: int, top: int | None = None) -> str:
    return _by_part(r("details", "cpu_by_process", "us_per_msg"), digits, top)


def _demo_bins(r: Result) -> str:
    p99 = r("timeline", "e2e_5s_bins", "p99_s").each()
    if len(p99) < 3:
        return NA
    return (
        f"p99 per 5-second bin {p99[0].f(2)} and {p99[1].f(2)} s in the first two, then {span(p99[2:], 2)} s "
        "to the last bin"
    )


def _skew(r: Result) -> str:
    return f"p99 {r('skew', 'p99').f(0)} ms, max {r('skew', 'max').f(0)} ms"


def _demo(r: Result) -> str:
    sent, stored = r("sent"), r("stored")
    all_stored = (
        "all stored"
        if sent.value == stored.value and sent.number() is not None
        else "stored " + (stored.f(0, grouped=True))
    )
    return (
        f"{sent.f(0, grouped=True)} sent, {all_stored}, {r('lost').text()} lost, {r('late_copies').text()} "
        f"late copies; the killed worker's group confirmed every channel again {r('recovery_s').f(1)} s "
        "after "
        f"the kill -9; send → readable row p50 {r('e2e', 'p50').f(2)} s, p99 {r('e2e', 'p99').f(2)} s "
        f"({_demo_bins(r)}); {r('cpu_us_per_msg').f(0, grouped=True)} µs of the whole machine's CPU per "
        f"message ({_demo_parts(r, 0, 6)}); copies of a message p99 {r('skew', 'p99').f(0)} ms apart"
    )


def _demo_goal(r: Result) -> str:
    lost = at_most(r("lost"), 0)
    p50, p99 = at_most(r("e2e", "p50"), DEMO_GOAL_P50_S), at_most(r("e2e", "p99"), DEMO_GOAL_P99_S)
    e2e = None if p50 is None or p99 is None else p50 and p99
    return (
        f"0 lost: {verdict(lost)}; e2e p50 ≤ {fixed(DEMO_GOAL_P50_S, 0)} s, p99 ≤ "
        f"{fixed(DEMO_GOAL_P99_S, 0)} s: {verdict(e2e)}"
    )


def _demo_summary(r: Result) -> str:
    return f"`{r('summary').text()}`"


def _demo_figures(r: Result) -> str:
    return (
        f"{_demo_summary(r)}; {_demo_bins(r)}. By part (`cpu_by_process`, µs per stored message): "
        f"{_demo_parts(r, 1)}."
    )


def _sustains(r: Result) -> str:
    parts = r("details", "cpu_by_process", "us_per_msg").items()
    first = max(parts, key=lambda kv: kv[1].number() or 0, default=("", View(None)))[0]
    return (
        f"the whole pipeline (simulator, IRC server, two replica groups of ingesters, Kafka, the sink, "
        f"Cassandra) costs about {r('cpu_us_per_msg').f(1, scale=1e-3)} ms of the machine's CPU per message "
        "with R = 2 (`cpu_us_per_msg` and, by part, `cpu_by_process` in `demo.json`) at the demo's default "
        f"{r('details', 'rate').f(0, grouped=True)} msg/s (`chatlog demo --rate` to change it; the highest "
        "rate it sustains is `chatlog bench capacity`'s, below). The largest single part of it: "
        f"{_PARTS.get(first, first or NA)}, "
        f"{r('details', 'cpu_by_process', 'us_per_msg', first).f(0)} µs a message"
    )


# -- monitor and read side -----------------------------------------------------------------------------------


def _monitor(r: Result) -> str:
    return (
        f"{r('channel_records_folded_per_s').k(1)} registry records/s and "
        f"{r('heartbeats_folded_per_s').k(1)} "
        f"heartbeats/s ({r('heartbeat_mb_folded_per_s').f(1)} MB/s) folded; one evaluation of "
        f"{r('channels').k()} channels {r('evaluation_s').f(2)} s; RSS {r('monitor_rss_mb').f(0)} MB"
    )


def _monitor_figures(r: Result) -> str:
    return (
        f"{r('channels').f(0, grouped=True)} registered channels and {r('workers').text()} ingesters sending "
        f"{fixed(_per_worker(r), 0)} heartbeats each ({r('heartbeat_bytes_avg').f(0, scale=1e-3)} KB on "
        f"average). The monitor folds {r('channel_records_folded_per_s').k(1)} registry records/s and "
        f"{r('heartbeats_folded_per_s').k(1)} heartbeats/s ({r('heartbeat_mb_folded_per_s').f(1)} MB/s); one "
        f"evaluation of {r('channels').k()} channels takes {r('evaluation_s').f(2)} s; RSS "
        f"{r('monitor_rss_mb').f(0)} MB."
    )


def _per_worker(r: Result) -> float | None:
    beats, workers = r("heartbeats").number(), r("workers").number()
    return None if beats is None or not workers else beats / workers


def _goals(r: Result, labels: dict[str, str]) -> str:
    """The goals of a result file's ``verdict``: those met, then those missed, each with its label."""
    met: list[str] = []
    missed: list[str] = []
    unknown: list[str] = []
    for key, label in labels.items():
        ok = r("verdict", key, "met").value
        (met if ok is True else missed if ok is False else unknown).append(label)
    out = []
    if met:
        out.append(", ".join(met) + ": met")
    if missed:
        out.append(", ".join(missed) + ": missed")
    if unknown:
        out.append(", ".join(unknown) + f": {NA}")
    return "; ".join(out)


def _serve(r: Result) -> str:
    stream, http = r("stream"), r("grid", "user_month_text", "http")
    return (
        f"a {stream('lines').k()}-line day streamed at {stream('http_text', 'lines_per_s').k(1)} lines/s as "
        f"text ({stream('ratio_text_to_direct_text').f(2)}{X} the reader alone), "
        f"{stream('http_json', 'lines_per_s').k(1)} as json; user-month p99 {http('1', 'p99_ms').f(0)} ms at "
        "1 "
        f"client, {http('32', 'p99_ms').f(0)} ms at 32 ({http('32', 'requests_per_s').f(1)} req/s); RSS "
        f"+{r('memory', 'whole_month_one_response', 'growth_mb').f(1)} MB for a whole month in one response"
    )


def _serve_goal(r: Result) -> str:
    g = r("goals")
    return _goals(
        r,
        {
            "stream_lines_per_s": f"a day ≥ {g('stream_lines_per_s').k()} lines/s",
            "stream_ratio_to_direct": f"≥ {g('stream_ratio_to_direct').f(1)}{X} direct",
            "rss_growth_mb": f"RSS < {g('rss_growth_mb_for_1m_lines').f(0)} MB",
            "user_month_p99_ms_at_32": f"user-month p99 ≤ {g('user_month_p99_ms_at_32').f(0)} ms at 32",
        },
    )


def _serve_figures(r: Result) -> str:
    data, stream, grid, memory = r("data"), r("stream"), r("grid"), r("memory")
    text, json_ = grid("user_month_text"), grid("user_month_json")
    return (
        f"Data: a month of {r('params', 'month_lines').f(0, grouped=True)} lines over its days, a busy day "
        f"of {data('busy_day_lines').f(0, grouped=True)} lines, a user with "
        f"{data('user_month_lines').text()} lines. User-month text: p50/p99 "
        f"{text('http', '1', 'p50_ms').f(1)}/{text('http', '1', 'p99_ms').f(1)} ms at 1 client, "
        f"{text('http', '32', 'p50_ms').f(0)}/{text('http', '32', 'p99_ms').f(0)} ms at 32 "
        f"({text('http', '32', 'requests_per_s').f(1)} req/s; direct {text('direct', '32', 'p50_ms').f(0)}/"
        f"{text('direct', '32', 'p99_ms').f(0)} ms, {text('direct', '32', 'requests_per_s').f(1)} reads/s); "
        f"json {json_('http', '1', 'p50_ms').f(1)}/{json_('http', '1', 'p99_ms').f(1)} ms at 1, "
        f"{json_('http', '32', 'p50_ms').f(0)}/{json_('http', '32', 'p99_ms').f(0)} ms at 32. A quiet "
        f"channel-day ({data('quiet_day_lines').text()} lines) p50 "
        f"{grid('channel_day_text', 'http', '1', 'p50_ms').f(1)} ms at 1 client. The busy day streamed at "
        f"{stream('http_text', 'lines_per_s').k(1)} lines/s as text (direct text "
        f"{stream('direct_text', 'lines_per_s').k(1)}: {stream('ratio_text_to_direct_text').f(2)}{X}), "
        f"{stream('http_json', 'lines_per_s').k(1)} as json (direct "
        f"{stream('direct_json', 'lines_per_s').k(1)}). RSS growth: "
        f"+{memory('whole_month_one_response', 'growth_mb').f(1)} MB for the whole month in one response, "
        f"+{memory('4_concurrent_busy_days', 'growth_mb').f(1)} MB for 4 busy days at once."
    )


# -- chatlog serve against justlog ---------------------------------------------------------------------------

VS_GOAL_USER_MONTH: Final = 1.5
VS_GOAL_CHANNEL_DAY: Final = 1.2
VS_GOAL_STORAGE: Final = 0.75
VS_GOAL_CURRENT: Final = 1.0


def _row(r: Result, name: str) -> View:
    return next((row for row in r("table").each() if row("row").value == name), View(None))


def _cell(r: Result, name: str, unit: str) -> str:
    row = _row(r, name)
    return f"{row('ratio').f(2)}{X} ({row('chatlog').f(1)} vs {row('justlog').f(1)}{unit}; p99 " + (
        f"{row('p99_ms', 'chatlog').f(0)} vs {row('p99_ms', 'justlog').f(0)} ms)"
    )


def _cpu(r: Result, name: str) -> tuple[str, str, str, str]:
    """chatlog's CPU per request of a grid cell (total, serve, Cassandra) and justlog's."""
    chatlog = r("chatlog", "grid", name)
    return (
        chatlog("cpu_ms_per_request_total").f(2),
        chatlog("cpu_ms_per_request", "server").f(2),
        chatlog("cpu_ms_per_request", "cassandra").f(2),
        r("justlog", "grid", name, "cpu_ms_per_request_total").f(2),
    )


def _vs_justlog(r: Result) -> str:
    day = _row(r, "channel_day_text_1")
    text_cpu, json_cpu = _cpu(r, "user_month_text_1"), _cpu(r, "user_month_json_1")
    flush, packed, compacted = _row(r, "storage"), _row(r, "storage_packed"), _row(r, "storage_compacted")

    def tables(state: str) -> str:
        rows = r("chatlog", state, "tables").items()
        return ", ".join(f"`{name}` {table('bytes_per_message').f(1)}" for name, table in rows)

    def rss(side: str) -> str:
        return largest(c("server_rss_mb_peak") for _, c in r(side, "grid").items()).f(2, scale=1e-3)

    def rates(side: str, cell: str) -> str:
        return span(r(side, "grid", cell, "pass_rates").each(), 0)

    slower = [
        f"{row('label').text()} ({row('p99_ms', 'chatlog').f(0)} vs {row('p99_ms', 'justlog').f(0)} ms)"
        for row in _grid_rows(r)
        if (row("p99_ms", "chatlog").number() or 0) > (row("p99_ms", "justlog").number() or math.inf)
    ]
    return (
        f"chatlog over justlog: user-month text {_cell(r, 'user_month_text_1', ' req/s')} at 1 client and "
        f"{_cell(r, 'user_month_text_32', '')} at 32, json {_cell(r, 'user_month_json_1', '')} at 1 and "
        f"{_cell(r, 'user_month_json_32', '')} at 32; channel day text {day('ratio').f(2)}{X} at 1 client "
        f"({day('chatlog').k(1)} vs {day('justlog').k(1)} lines/s) and "
        f"{_row(r, 'channel_day_text_8')('ratio').f(2)}{X} at 8, json "
        f"{_row(r, 'channel_day_json_1')('ratio').f(2)}{X} and "
        f"{_row(r, 'channel_day_json_8')('ratio').f(2)}{X}; "
        f"p99 above justlog's: {', '.join(slower) or 'none'}. CPU per user-month (1 client): text chatlog "
        f"{text_cpu[0]} ms (serve {text_cpu[1]}, Cassandra {text_cpu[2]}), justlog {text_cpu[3]}; json "
        f"{json_cpu[0]} ({json_cpu[1]} + {json_cpu[2]}) against {json_cpu[3]}. Storage: justlog "
        f"{flush('justlog').f(1)} B per message (both gzipped copies); chatlog {flush('chatlog').f(1)} B as "
        "the "
        f"backfill wrote it, after a flush ({flush('ratio').f(2)}{X}: {tables('storage') or NA}), "
        f"{packed('chatlog').f(1)} B packed, compactions as configured, as read ({packed('ratio').f(2)}{X}: "
        f"{tables('storage_packed') or NA}); beside, major-compacted {compacted('chatlog').f(1)} B "
        f"({compacted('ratio').f(2)}{X}: {tables('storage_compacted') or NA}). RSS under load: justlog "
        f"{rss('justlog')} GB, chatlog serve {rss('chatlog')} GB "
        f"(its default workers, one per CPU: {r('cpus').text()}). The passes' rates move (user-month json, 1 "
        f"client: justlog {rates('justlog', 'user_month_json_1')}, chatlog "
        f"{rates('chatlog', 'user_month_json_1')} req/s; text: {rates('justlog', 'user_month_text_1')} and "
        f"{rates('chatlog', 'user_month_text_1')}). {_vs_justlog_current(r)}"
    )


def _vs_justlog_current(r: Result) -> str:
    """The current case's sentence: its ratios, and the pack that made the state read."""
    cells = [row for row in _grid_rows(r) if str(row("row").value).startswith("current_")]
    if not cells:
        return "The current month and day were not measured in this run."
    ratios = ", ".join(
        f"{str(row('label').value).removeprefix('current ')} {row('ratio').f(2)}{X}" for row in cells
    )
    pack = r("current", "chatlog", "pack", "pack_s")
    return (
        f"The current month and day (a data set that ends now, written as the sink writes the present, then "
        f"the hourly pack, {pack.f(0)} s): chatlog over justlog {ratios}."
    )


def _grid_rows(r: Result) -> list[View]:
    return [row for row in r("table").each() if row("p99_ms").value is not None]


def _vs_justlog_goal(r: Result) -> str:
    def ratios(prefix: str) -> list[View]:
        return [row("ratio") for row in _grid_rows(r) if str(row("row").value).startswith(prefix)]

    def judged(values: list[View], limit: float) -> bool | None:
        numbers = [v.number() for v in values]
        return None if not numbers or None in numbers else all((n or 0) >= limit for n in numbers)

    text, json_ = ratios("user_month_text"), ratios("user_month_json")
    day = ratios("channel_day")
    current = ratios("current_")
    rows = _grid_rows(r)
    slower = [
        f"{row('label').text()} ({row('p99_ms', 'chatlog').f(0)} vs {row('p99_ms', 'justlog').f(0)} ms)"
        for row in rows
        if (row("p99_ms", "chatlog").number() or 0) > (row("p99_ms", "justlog").number() or math.inf)
    ]
    if not rows:
        p99 = NA
    elif slower:
        p99 = f"met in every cell but {', '.join(slower)}"
    else:
        p99 = "met in every cell"
    packed = _row(r, "storage_packed")("ratio")
    storage = (
        f"≤ {fixed(VS_GOAL_STORAGE, 2)}{X} as the product leaves it: "
        f"{verdict(at_most(packed, VS_GOAL_STORAGE))} ({packed.f(2)}{X})"
    )
    now = (
        f"{verdict(judged(current, VS_GOAL_CURRENT))} ({span(current, 2)}{X})"
        if current
        else "not measured in this run"
    )
    return (
        f"user-month ≥ {fixed(VS_GOAL_USER_MONTH, 1)}{X}: text {verdict(judged(text, VS_GOAL_USER_MONTH))} "
        f"({', '.join(v.f(2) + X for v in text) or NA}), json {verdict(judged(json_, VS_GOAL_USER_MONTH))} "
        f"({', '.join(v.f(2) + X for v in json_) or NA}); p99 ≤ justlog's: {p99}; channel day ≥ "
        f"{fixed(VS_GOAL_CHANNEL_DAY, 1)}{X}: {verdict(judged(day, VS_GOAL_CHANNEL_DAY))} "
        f"({span(day, 2)}{X}); "
        f"current month and day ≥ {fixed(VS_GOAL_CURRENT, 1)}{X}: {now}; storage {storage}"
    )


READ_FLOOR_SIDES: Final = (
    ("chatlog now", "chatlog"),
    ("floor http+read", "HTTP + one read"),
    ("floor http", "HTTP alone"),
    ("floor read", "one read alone"),
    ("floor cassandra", "one Cassandra no-op"),
)


def _read_floor(r: Result) -> str:
    cells = []
    for clients in ("1", "32"):
        at = r("table", clients)
        parts = ", ".join(f"{label} {at(side, 'vs_justlog').f(2)}{X}" for side, label in READ_FLOOR_SIDES)
        cells.append(
            f"{clients} client{'s' if clients != '1' else ''}: justlog "
            f"{at('justlog now', 'requests_per_s').f(0)} req/s; {parts}"
        )
    return "; ".join(cells)


def _read_floor_goal(r: Result) -> str:
    floors = [r("table", c, "floor http+read", "vs_justlog") for c in ("1", "32")]
    one, many = (verdict(at_least(floor, VS_GOAL_CURRENT)) for floor in floors)
    at = r("table", "1")
    return (
        f"current user-month ≥ {fixed(VS_GOAL_CURRENT, 1)}{X} reachable with a Cassandra read per request "
        f"(its floor ≥ {fixed(VS_GOAL_CURRENT, 1)}{X}): 1 client {one}, 32 clients {many}; from 1 client a "
        f"Cassandra no-op request alone takes {at('floor cassandra', 'p50_ms').f(2)} ms p50, justlog's whole "
        f"answer {at('justlog now', 'p50_ms').f(2)} ms"
    )


def _read_floor_figures(r: Result) -> str:
    rows = []
    for clients in ("1", "32"):
        at = r("table", clients)
        for side, label in (("justlog now", "justlog"), *READ_FLOOR_SIDES):
            cpu = at(side, "cpu_ms_per_request")
            who = f"{clients} client{'s' if clients != '1' else ''}, {label}"
            rate = f"{at(side, 'requests_per_s').f(0)} req/s, p99 {at(side, 'p99_ms').f(1)} ms"
            used = ", ".join(
                f"{name} {cpu(key).f(2)}"
                for key, name in (("server", "server"), ("cassandra", "Cassandra"), ("client", "client"))
                if cpu(key).number() is not None
            )
            rows.append(f"{who}: {rate}, CPU ms/request {used}")
    return "Latest: " + "; ".join(rows) + "."


def _fresh(r: Result) -> str:
    stopped, running = r("sink_stopped"), r("sink_running")
    return (
        "a line said on the IRC server → in `/api/v2/recent-messages` through a real `chatlog ingest` and "
        f"`chatlog serve`: p50/p99 {stopped('p50_ms').f(0)}/{stopped('p99_ms').f(0)} ms with the sink "
        f"stopped, {running('p50_ms').f(0)}/{running('p99_ms').f(0)} ms with it running"
    )


def _fill(r: Result) -> str:
    imported, filled = r("import"), r("fill")
    return (
        f"{r('lines').k(0)} lines: `chatlog fill --all` from justlog {filled('lines_per_s').k(1)} lines/s "
        f"({filled('cpu_us_per_line').f(1)} µs CPU per line; justlog {filled('peer_cpu_s').f(1)} CPU s), "
        f"`chatlog import` of its files {imported('lines_per_s').k(1)} lines/s "
        f"({imported('cpu_us_per_line').f(1)} µs): fill/import {r('fill_rate_vs_import').f(2)}{X}"
    )


def _fill_goal(r: Result) -> str:
    return f"fill ≥ import's rate: {verdict(at_least(r('fill_rate_vs_import'), 1.0))}"


FRESH_GOAL_P99_MS: Final = 1000


def _fresh_goal(r: Result) -> str:
    oks = [at_most(r(phase, "p99_ms"), FRESH_GOAL_P99_MS) for phase in ("sink_stopped", "sink_running")]
    ok = None if None in oks else all(oks)
    return f"p99 ≤ {fixed(FRESH_GOAL_P99_MS / 1000, 0)} s either way: {verdict(ok)}"


def _fresh_figures(r: Result) -> str:
    stopped, running = r("sink_stopped"), r("sink_running")
    missed = [r(phase, "missed_10s").number() for phase in ("sink_stopped", "sink_running")]
    if None in missed:
        missed_text = f"missed: {NA}"
    else:
        total = sum(m or 0 for m in missed)
        missed_text = "none missed" if total == 0 else f"{fixed(total, 0)} missed"
    return (
        f"With the sink stopped: p50 {stopped('p50_ms').f(0)} ms, p99 {stopped('p99_ms').f(0)} ms; with a "
        "real "
        f"`chatlog sink` running: p50 {running('p50_ms').f(0)} ms, p99 {running('p99_ms').f(0)} ms; "
        f"{missed_text} ({stopped('samples').text()} and {running('samples').text()} samples, polled every "
        f"{r('poll_ms').text()} ms)."
    )


BENCHMARKS: Final[tuple[Benchmark, ...]] = (
    Benchmark(
        "parse",
        "parser",
        "lines of a fixed Twitch corpus parsed per CPU-second, ours against the `irc` package",
        "chatlog bench parse",
        "bench_parse.json",
        _parse,
        _parse_goal,
        _parse_figures,
    ),
    Benchmark(
        "ingest",
        "ingester",
        "one ingester fed by a local IRC blaster: events acknowledged by Kafka per second, against a raw "
        "producer of the same events",
        "chatlog bench ingest",
        "bench_ingest.json",
        _ingest,
        _ingest_goal,
        _ingest_figures,
    ),
    Benchmark(
        "irc",
        "IRC read path",
        "lines/s one pool connection turns from socket bytes into batches, against the `irc` package",
        "chatlog bench irc --lines 20000 --irc-package-lines 5000",
        "bench_irc_read.json",
        _irc,
        _none,
        _irc_figures,
    ),
    Benchmark(
        "rebalance",
        "rebalance",
        "kill -9 of an ingester to all its channels confirmed again; a new worker's start to its share "
        "confirmed",
        "chatlog bench rebalance",
        "bench_rebalance.json",
        _rebalance,
        _rebalance_goal,
        _rebalance_figures,
    ),
    Benchmark(
        "scale",
        "scale",
        "time to confirm 10k-100k channels over 4 ingesters against the JOIN-rate bound, RSS per ingester",
        "chatlog bench scale",
        "bench_scale.json",
        _scale,
        _scale_goal,
        _scale_figures,
    ),
    Benchmark(
        "placement",
        "placement (simulated)",
        "channels on IRC connections by measured load against packing by count: max/mean msg/s per "
        "connection, moves, messages lost",
        "chatlog bench placement",
        "bench_placement.json",
        _placement,
        _placement_goal,
        _placement_figures,
    ),
    Benchmark(
        "sink",
        "sink",
        "Kafka → Spark → Cassandra against a raw driver insert, CPU per stored event; every message sent "
        "twice, as with R = 2 groups",
        "chatlog bench sink",
        "bench_sink.json",
        _sink,
        _sink_goal,
        _sink_figures,
    ),
    Benchmark(
        "capacity",
        "capacity",
        "the demo's pipeline (2 replica groups of 2 ingesters, Kafka, the sink, `chatlog serve`) at rising "
        "rates: CPU per message by part, IRC send → visible over HTTP, the highest rate sustained",
        "chatlog bench capacity",
        "bench_capacity.json",
        _capacity,
        _capacity_goal,
        _capacity_figures,
    ),
    Benchmark(
        "demo",
        "the demo",
        "the whole pipeline with simulated chatters (500 channels, 1,000 msg/s, R = 2), a kill -9 and a "
        "scale-out: loss, recovery, latency, CPU per message",
        "make demo",
        "demo.json",
        _demo,
        _demo_goal,
        _demo_figures,
    ),
    Benchmark(
        "monitor",
        "monitor",
        "the heartbeat monitor's folding rates and the time of one evaluation",
        "chatlog bench monitor",
        "monitor.json",
        _monitor,
        _none,
        _monitor_figures,
    ),
    Benchmark(
        "serve",
        "HTTP API",
        "`chatlog serve` over loopback against the reader library called directly",
        "chatlog bench serve",
        "bench_serve.json",
        _serve,
        _serve_goal,
        _serve_figures,
    ),
    Benchmark(
        "vs-justlog",
        "vs justlog",
        "`chatlog serve` side by side with justlog on issue 35's data set (1.5M lines of one channel over "
        "30 days, 2,000 users), both up, their passes taken in turn, the same URL lists and load, a cell "
        "its median pass's (method below)",
        "chatlog bench vs-justlog /path/to/justlog --days 30 --lines-per-day 50000 --passes 5",
        "bench_vs_justlog.json",
        _vs_justlog,
        _vs_justlog_goal,
    ),
    Benchmark(
        "fill",
        "fill from a peer",
        "`chatlog fill --all` of a channel never logged here from a real justlog (its archiver's gzipped "
        "tree of 30 days x 50,000 lines) against `chatlog import` of the same files, in one run, into Kafka",
        "chatlog bench fill /path/to/justlog",
        "bench_fill.json",
        _fill,
        _fill_goal,
    ),
    Benchmark(
        "read_floor",
        "current user-month floor",
        "a user's current month (text, 1 and 32 clients) from justlog, `chatlog serve` and the floors of "
        "its parts (a bare ASGI app: HTTP alone, HTTP and one raw-driver read; the read alone; a Cassandra "
        "no-op request), in one run",
        "chatlog bench read-floor /path/to/justlog",
        "bench_read_floor.json",
        _read_floor,
        _read_floor_goal,
        _read_floor_figures,
    ),
    Benchmark(
        "fresh",
        "fresh reads",
        "a line said on the IRC server to the line in recent messages, with the sink stopped and running",
        "chatlog bench fresh --samples 30",
        "bench_fresh.json",
        _fresh,
        _fresh_goal,
        _fresh_figures,
    ),
)

EXTRA_FIGURES: Final[dict[str, tuple[str, Callable[[Result], str]]]] = {
    "sustains": ("demo.json", _sustains),
    "skew": ("demo.json", _skew),
}
"""``{{ figures NAME }}`` that are no benchmark's row: the result file they read and how."""


# -- the page ------------------------------------------------------------------------------------------------


def _escape(text: str) -> str:
    """A table cell: no pipe that would end it, no line break."""
    return text.replace("|", "\\|").replace("\n", " ")


def _files(result: Result) -> str:
    names = [result.name] + ([result.plot] if result.plot else [])
    return ", ".join(f"[`{name}`](../results/{name})" for name in names)


def table(results: Path) -> str:
    """The page's table: one row per benchmark, from its result file."""
    lines = [
        "| benchmark | what it measures | latest figures | goal | command | result file |",
        "|---|---|---|---|---|---|",
    ]
    for bench in BENCHMARKS:
        result = Result.read(results, bench.result)
        if result.problem:
            figures, goal = f"{NA} ({result.problem})", NA
        else:
            figures, goal = bench.headline(result), bench.goal(result)
        cells = (bench.title, bench.measures, figures, goal, f"`{bench.command}`", _files(result))
        lines.append("| " + " | ".join(_escape(cell) for cell in cells) + " |")
    return "\n".join(lines)


def figures(results: Path, key: str) -> str:
    """The figures ``{{ figures KEY }}`` stands for."""
    bench = next((b for b in BENCHMARKS if b.key == key), None)
    if bench is not None and bench.figures is not None:
        name, render = bench.result, bench.figures
    elif key in EXTRA_FIGURES:
        name, render = EXTRA_FIGURES[key]
    else:
        raise ValueError(f"{TEMPLATE}: no figures named {key!r}")
    result = Result.read(results, name)
    return f"{NA} (`results/{name}`: {result.problem})" if result.problem else render(result)


NOTICE: Final = (
    f"<!-- Generated by `{COMMAND}` from `results/*.json` and `{TEMPLATE}`: edit the template (or the result "
    f"files, by running the benchmarks), then run `{COMMAND}`. -->"
)
_PLACEHOLDER: Final = re.compile(r"\{\{ *(\w+)(?: +([\w-]+))? *\}\}")


def render(results: Path, template: str) -> str:
    """The page: ``template`` with its placeholders filled from the result files in ``results``."""

    def fill(match: re.Match[str]) -> str:
        name, arg = match.group(1), match.group(2)
        if name == "notice" and arg is None:
            return NOTICE
        if name == "table" and arg is None:
            return table(results)
        if name == "figures" and arg is not None:
            return figures(results, arg)
        raise ValueError(f"{TEMPLATE}: unknown placeholder {match.group(0)!r}")

    return _PLACEHOLDER.sub(fill, template)


def page(results: Path = RESULTS, template: Path = TEMPLATE) -> str:
    """docs/benchmarks.md as the result files and the template make it now."""
    return render(results, template.read_text(encoding="utf-8"))
