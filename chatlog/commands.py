"""Registers the sub-commands of the ingest and sink packages on the main app."""

from __future__ import annotations

from typing import Annotated

import typer

bench_app = typer.Typer(help="Benchmarks; results as JSON (and PNG) under results/.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Attach every sub-command. Each package owns the module that defines its commands."""
    import ingest.cli
    import ingest.import_cli
    import sink.cli
    import sink.coverage_cli

    ingest.import_cli.register(app, bench_app)
    ingest.cli.register(app, bench_app)
    sink.cli.register(app, bench_app)
    sink.coverage_cli.register(app)
    app.add_typer(bench_app, name="bench")
    import chatlog.simulate_cli
    from chatlog import init_cli

    chatlog.simulate_cli.register(app)
    init_cli.register(app)
    import chatlog.monitor.cli

    chatlog.monitor.cli.register(app, bench_app)

    @app.command()
    def demo(
        duration: Annotated[float, typer.Option(help="Seconds of simulated chat.")] = 120.0,
        channels: Annotated[int, typer.Option(help="Channels to register.")] = 500,
        rate: Annotated[float, typer.Option(help="Messages per second sent in total.")] = 2000.0,
    ) -> None:
        """The whole pipeline locally: chatters, 2x2 ingesters, the sink; a kill, a scale-out, a report."""
        from rich.console import Console

        from chatlog.demo.run import demo_config, execute
        from chatlog.settings import StackSettings, load

        report = execute(load(StackSettings), demo_config(channels, rate, duration), Console())
        if report.lost:
            raise typer.Exit(1)

    @bench_app.command("e2e")
    def bench_e2e(
        rates: Annotated[str, typer.Option(help="Comma-separated messages/s.")] = "1000,2000,5000",
        duration: Annotated[float, typer.Option(help="Seconds per rate.")] = 30.0,
        channels: Annotated[int, typer.Option()] = 200,
    ) -> None:
        """End-to-end latency (IRC send to Cassandra row) at fixed rates through the whole pipeline."""
        from chatlog.bench_pipeline import e2e_latency
        from chatlog.settings import StackSettings, load

        e2e_latency(load(StackSettings), [float(r) for r in rates.split(",")], duration, channels)

    @bench_app.command("scale")
    def bench_scale(
        sizes: Annotated[str, typer.Option(help="Comma-separated channel counts.")] = "10000,50000,100000",
        workers: Annotated[int, typer.Option()] = 4,
        join_rate: Annotated[int, typer.Option(help="JOINs per 10 s per ingester.")] = 2000,
        timeout: Annotated[float, typer.Option(help="Give up after this many seconds per size.")] = 600.0,
    ) -> None:
        """Time to confirm 10k-100k channels over N ingesters, and RSS per ingester."""
        from chatlog.bench_pipeline import scale
        from chatlog.settings import StackSettings, load

        scale(load(StackSettings), [int(x) for x in sizes.split(",")], workers, join_rate, timeout)

    @app.command()
    def smoke() -> None:
        """One chat event through Kafka and one row through Cassandra (a quick check of the stack)."""
        from chatlog import smoke as smoke_run
        from chatlog.settings import StackSettings, load

        typer.echo(smoke_run.run(load(StackSettings)))
