"""``chatlog bench ...``: every benchmark of the project, on the local stack; results as JSON (and PNG)
under results/.

Registered on the ``chatlog`` command through the ``chatlog.commands`` entry point (pyproject.toml), so
the operator's CLI never imports the benchmarks: an install without them simply has no ``bench``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Benchmarks; results as JSON (and PNG) under results/.", no_args_is_help=True)


def register(main: typer.Typer) -> None:
    """Add ``bench`` to the main ``chatlog`` app (the ``chatlog.commands`` entry point)."""
    main.add_typer(app, name="bench")


@app.command("parse")
def bench_parse(
    lines: Annotated[int, typer.Option(min=1000, help="Lines parsed per run (the corpus cycled).")] = 500_000,
    repeat: Annotated[int, typer.Option(min=1, help="Runs; the best counts.")] = 3,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_parse.json"),
) -> None:
    """Parser throughput (lines/s) on a fixed Twitch corpus, ours against the `irc` package."""
    from lab.bench import parse as b

    result = b.run(lines=lines, repeat=repeat, out=out)
    for name, rate in result["lines_per_s"].items():
        wall = result["wall_lines_per_s"][name]
        typer.echo(
            f"{name:>13}: {rate:>9,} lines/CPU-s  ({result['us_per_line'][name]} µs/line; "
            f"wall clock {wall:,} lines/s)"
        )
    typer.echo(f"corpus {result['corpus']['size']} lines, {lines} per run, best of {repeat}; wrote {out}")


@app.command("ingest")
def bench_ingest(
    lines: Annotated[int, typer.Option(min=1000, help="PRIVMSG lines blasted at the ingester.")] = 1_000_000,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_ingest.json"),
    profile: Annotated[
        Path | None, typer.Option(help="Also write a cProfile of the ingester to this file.")
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Ingester runs; the best counts.")] = 3,
) -> None:
    """One ingester fed by a local IRC blaster: events acked by Kafka per second vs the raw producer."""
    from lab.bench import ingest as b

    result = b.run(lines=lines, out=out, profile=profile, repeat=repeat)
    typer.echo(b.summary(result))


@app.command("rebalance")
def bench_rebalance(
    channels: Annotated[int, typer.Option(min=1, help="Registered channels.")] = 1000,
    workers: Annotated[int, typer.Option(min=2, help="Ingesters in the group.")] = 3,
    rounds: Annotated[int, typer.Option(min=1, help="Kill/start rounds.")] = 3,
    join_rate: Annotated[int, typer.Option(min=1, help="JOINs per 10 s per ingester.")] = 1000,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_rebalance.json"),
) -> None:
    """Time from kill -9 to all channels confirmed again, and from a new worker's start to its share."""
    from lab.bench import rebalance as b

    result = b.run(channels=channels, workers=workers, rounds=rounds, out=out, join_rate=join_rate)
    typer.echo(b.summary(result))


@app.command("placement")
def bench_placement(
    channels: Annotated[int, typer.Option(min=10, help="Channels (Zipf-like rates).")] = 2000,
    workers: Annotated[int, typer.Option(min=1, help="Workers (ingesters of one replica).")] = 4,
    top10_rate: Annotated[
        float, typer.Option(min=1, help="Rate of the 10th hottest channel, msg/s.")
    ] = 300.0,
    hours: Annotated[float, typer.Option(min=0.1, help="Simulated hours.")] = 2.0,
    seeds: Annotated[int, typer.Option(min=1, help="Runs with other hot channels and draws.")] = 3,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_placement.json"),
) -> None:
    """Channels on connections by count (before) vs by measured load (after), simulated: max/mean
    msg/s per connection and per worker, moves per hour, messages lost during moves."""
    from lab.bench import placement as b

    result = b.run(
        channels=channels, workers=workers, top10_rate=top10_rate, hours=hours, seeds=seeds, out=out
    )
    typer.echo(b.summary(result))
    typer.echo(f"wrote {out}")


@app.command("sink")
def bench_sink(
    events: Annotated[int, typer.Option(min=1000, help="Distinct events of the throughput run.")] = 150_000,
    name: Annotated[str, typer.Option(help="Results file name under results/.")] = "bench_sink",
    copy_share: Annotated[
        float,
        typer.Option(
            min=0,
            max=1,
            help="Share of the messages sent twice (1 = every one, as with R = 2 groups).",
        ),
    ] = 1.0,
) -> None:
    """Sink throughput (Kafka -> Spark -> Cassandra) next to a raw driver insert, CPU per stored event (its
    latency under load: `chatlog bench capacity`)."""
    from core.settings import load
    from lab.bench.sink import run_bench
    from sink.settings import SinkSettings

    typer.echo(run_bench(load(SinkSettings), events=events, name=name, copy_share=copy_share))


@app.command("fresh")
def bench_fresh(
    samples: Annotated[
        int, typer.Option(min=1, help="Lines said per phase (sink stopped, sink running).")
    ] = 50,
    poll_ms: Annotated[
        int, typer.Option(min=1, help="Milliseconds between two asks of recent messages.")
    ] = 20,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_fresh.json"),
) -> None:
    """IRC -> visible in /api/v2/recent-messages, sink stopped and running (real ingest, serve, sink)."""
    from lab.bench import fresh as b

    result = b.run(samples=samples, poll_ms=poll_ms, out=out)
    for line in b.summary(result):
        typer.echo(line)
    typer.echo(f"wrote {out}")


@app.command("monitor")
def bench_monitor(
    channels: Annotated[int, typer.Option(min=1, help="Registered channels.")] = 100_000,
    workers: Annotated[int, typer.Option(min=1, help="Ingesters sending heartbeats.")] = 100,
    beats: Annotated[int, typer.Option(min=1, help="Heartbeats per ingester.")] = 20,
) -> None:
    """Folding rates (registry records/s, heartbeats/s) and evaluation time of the monitor."""
    import json

    from core.settings import KafkaSettings, load
    from lab.bench.monitor import run

    typer.echo(
        json.dumps(run(load(KafkaSettings), channels=channels, workers=workers, beats=beats), indent=2)
    )


@app.command("capacity")
def bench_capacity(
    rates: Annotated[
        str, typer.Option(help="Comma-separated messages/s, one step each.")
    ] = "1000,2000,4000,6000,8000,10000",
    step: Annotated[float, typer.Option(help="Seconds of each step.")] = 180.0,
    settle: Annotated[float, typer.Option(help="Seconds of each step before it is measured.")] = 60.0,
    channels: Annotated[int, typer.Option()] = 500,
) -> None:
    """The demo's pipeline at rising rates (two replica groups, sink, serve): CPU per message by part, e2e
    over HTTP, and the highest rate this machine sustains (results/bench_capacity.json, .png)."""
    from core.settings import StackSettings, load
    from lab.bench.capacity import capacity

    if not 0 <= settle < step:
        raise typer.BadParameter("--settle must be at least 0 and below --step")
    capacity(load(StackSettings), tuple(float(r) for r in rates.split(",")), step, settle, channels)


@app.command("scale")
def bench_scale(
    sizes: Annotated[str, typer.Option(help="Comma-separated channel counts.")] = "10000,50000,100000",
    workers: Annotated[int, typer.Option()] = 4,
    join_rate: Annotated[int, typer.Option(help="JOINs per 10 s per ingester.")] = 2000,
    timeout: Annotated[float, typer.Option(help="Give up after this many seconds per size.")] = 600.0,
) -> None:
    """Time to confirm 10k-100k channels over N ingesters, and RSS per ingester."""
    from core.settings import StackSettings, load
    from lab.bench.pipeline import scale

    scale(load(StackSettings), [int(x) for x in sizes.split(",")], workers, join_rate, timeout)


@app.command("irc")
def bench_irc(
    lines: Annotated[int, typer.Option(min=1000, help="Lines read through one pool connection.")] = 500_000,
    irc_package_lines: Annotated[
        int, typer.Option(help="Lines read through the irc package's reactor, for comparison (0 = skip).")
    ] = 100_000,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_irc_read.json"),
) -> None:
    """The IRC read path: lines/s one pool connection turns from socket bytes into batches, vs `irc`."""
    import json

    from lab.bench.irc_read import run_read_bench
    from lab.results import write_json

    result = run_read_bench(
        lines, compare_irc_package=irc_package_lines > 0, irc_package_lines=irc_package_lines
    )
    write_json(out, result)
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    typer.echo(f"wrote {out}")


@app.command("serve")
def bench_serve(
    month_lines: Annotated[
        int,
        typer.Option(min=1000, help="Lines of the channel spread over its month (every day)."),
    ] = 20_000,
    day_lines: Annotated[
        int, typer.Option(min=1000, help="Lines more on the busy day (streamed).")
    ] = 200_000,
    user_lines: Annotated[int, typer.Option(min=10, help="Lines of the heavy chatter over the month.")] = 600,
    clients: Annotated[
        str, typer.Option(help="Comma-separated concurrent clients of the grid.")
    ] = "1,32,128",
    seconds: Annotated[float, typer.Option(min=0.5, help="Seconds of load per read, clients and way.")] = 2.0,
    limit: Annotated[
        float, typer.Option(min=1.0, help="Seconds after which a grid cell's running requests are cancelled.")
    ] = 8.0,
    parallel: Annotated[int, typer.Option(min=1, help="Concurrent busy-day responses of the RSS run.")] = 4,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_serve.json"),
) -> None:
    """chatlog serve over loopback against the reader library: req/s, p50/p99, lines/s, server RSS."""
    from core.settings import load
    from lab.bench import serve as b
    from sink.settings import SinkSettings

    try:
        counts = tuple(int(c) for c in clients.split(",") if c.strip())
    except ValueError:
        raise typer.BadParameter(f"not a list of numbers: {clients!r}", param_hint="--clients") from None
    if not counts or min(counts) < 1:
        raise typer.BadParameter(
            "give at least one count of clients, each at least 1", param_hint="--clients"
        )
    params = b.Params(
        month_lines=month_lines,
        day_lines=day_lines,
        user_lines=user_lines,
        clients=counts,
        seconds=seconds,
        limit_s=limit,
        parallel=parallel,
    )
    result = b.run(load(SinkSettings), params, out)
    typer.echo(b.summary(result))
    typer.echo(f"wrote {out} and {out.with_suffix('.png')}")


JustlogBinary = Annotated[
    Path,
    typer.Argument(
        help="The justlog binary (built from its repository, outside this one).", show_default=False
    ),
]
"""The argument of the benchmarks against a real justlog."""
MonthDays = Annotated[int, typer.Option(min=1, max=30, help="Days of the channel's month.")]
LinesPerDay = Annotated[int, typer.Option(min=1000, help="Lines of each day.")]
Chatters = Annotated[int, typer.Option(min=100, help="Chatters of the channel.")]
"""The options of a channel's month of lines (:class:`lab.bench.justlog_tree.TreeParams`)."""
Passes = Annotated[int, typer.Option(min=1, help="Measured passes per server; a cell is its median pass's.")]
WorkDir = Annotated[
    Path | None, typer.Option(help="Keep the tree and the scratch files here (default: a temporary dir).")
]
"""The options of the benchmarks that alternate servers over a tree."""


@app.command("vs-justlog")
def bench_vs_justlog(
    justlog: JustlogBinary,
    days: MonthDays = 10,
    lines_per_day: LinesPerDay = 20_000,
    users: Chatters = 2_000,
    user_month_lines: Annotated[
        int, typer.Option(min=10, help="About how many lines each user whose month is read has.")
    ] = 300,
    user_clients: Annotated[
        str, typer.Option(help="Comma-separated clients of the user-month reads.")
    ] = "1,32",
    day_clients: Annotated[
        str, typer.Option(help="Comma-separated clients of the channel-day reads.")
    ] = "1,8",
    seconds: Annotated[
        float, typer.Option(min=0.5, help="A cell ends after this long, or when its URL list is used up.")
    ] = 5.0,
    passes: Passes = 3,
    work: WorkDir = None,
    phases: Annotated[
        str,
        typer.Option(
            help="Comma-separated cases: past (a past month, as the product leaves it), current (a data "
            "set that ends now, read as the sink writes it)."
        ),
    ] = "past,current",
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_vs_justlog.json"),
) -> None:
    """chatlog serve side by side with justlog: the same lines, URL lists and load; the ratio per read."""
    from core.settings import load
    from lab.bench import vs_justlog as b
    from sink.settings import SinkSettings

    params = b.Params(
        days=days,
        lines_per_day=lines_per_day,
        users=users,
        user_month_lines=user_month_lines,
        user_clients=_counts(user_clients, "--user-clients"),
        day_clients=_counts(day_clients, "--day-clients"),
        seconds=seconds,
        passes=passes,
    )
    chosen = [p.strip() for p in phases.split(",") if p.strip()]
    if not chosen or any(p not in b.PHASES for p in chosen):
        raise typer.BadParameter(f"give some of {', '.join(b.PHASES)}, got {phases!r}", param_hint="--phases")
    result = b.run(load(SinkSettings), justlog.resolve(), params, out, work, phases=chosen)
    typer.echo(b.summary(result))
    typer.echo(f"wrote {out} and {out.with_suffix('.png')}")


@app.command("read-floor")
def bench_read_floor(
    justlog: JustlogBinary,
    days: MonthDays = 30,
    lines_per_day: LinesPerDay = 50_000,
    users: Chatters = 2_000,
    passes: Passes = 5,
    work: WorkDir = None,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_read_floor.json"),
) -> None:
    """A current user-month read: justlog, chatlog serve and the floors of its parts (HTTP, one read)."""
    from core.settings import load
    from lab.bench import read_floor as b
    from lab.bench.vs_justlog import workdir
    from sink.settings import SinkSettings

    params = b.Params(days=days, lines_per_day=lines_per_day, users=users, passes=passes)
    with workdir(work) as root:
        result = b.run(load(SinkSettings), justlog.resolve(), params, out, root)
    typer.echo(b.summary(result))
    typer.echo(f"wrote {out}")


@app.command("fill")
def bench_fill(
    justlog: JustlogBinary,
    days: MonthDays = 30,
    lines_per_day: LinesPerDay = 50_000,
    users: Chatters = 2_000,
    out: Annotated[Path, typer.Option(help="Result JSON.")] = Path("results/bench_fill.json"),
) -> None:
    """chatlog fill --all from a real justlog vs chatlog import of the same lines from its files."""
    from core.settings import load
    from lab.bench import fill as b
    from lab.bench.justlog_tree import TreeParams
    from sink.settings import SinkSettings

    params = TreeParams(days=days, lines_per_day=lines_per_day, users=users)
    result = b.run(load(SinkSettings), justlog.resolve(), params, out)
    typer.echo(b.summary(result))
    typer.echo(f"wrote {out}")


def _counts(text: str, hint: str) -> tuple[int, ...]:
    """A comma-separated list of positive counts of clients."""
    try:
        counts = tuple(int(c) for c in text.split(",") if c.strip())
    except ValueError:
        raise typer.BadParameter(f"not a list of numbers: {text!r}", param_hint=hint) from None
    if not counts or min(counts) < 1:
        raise typer.BadParameter("give at least one count of clients, each at least 1", param_hint=hint)
    return counts


@app.command("report")
def bench_report(
    results: Annotated[Path, typer.Option(help="The result files (JSON, and their PNGs).")] = Path("results"),
    template: Annotated[
        Path, typer.Option(help="The page's prose, with the placeholders the results fill.")
    ] = Path("docs/benchmarks.md.in"),
    output: Annotated[Path, typer.Option("--output", "-o", help="The page written.")] = Path(
        "docs/benchmarks.md"
    ),
    check: Annotated[
        bool, typer.Option("--check", help="Do not write: exit 1 when the page is out of date.")
    ] = False,
) -> None:
    """docs/benchmarks.md from the result files and its template: the figures made, not typed."""
    from chatlog.cli.generated import write_or_check
    from core.errors import ChatlogError
    from lab.bench import report as b

    try:
        text = b.page(results, template)
    except OSError as exc:
        raise ChatlogError(f"cannot read --template {template}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ChatlogError(str(exc)) from None
    write_or_check(output, text, check=check, command=b.COMMAND)
