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

    ingest.import_cli.register(app, bench_app)
    ingest.cli.register(app, bench_app)
    sink.cli.register(app, bench_app)
    app.add_typer(bench_app, name="bench")
    import chatlog.simulate_cli
    from chatlog import init_cli

    chatlog.simulate_cli.register(app)
    init_cli.register(app)

    @app.command()
    def demo(duration: Annotated[float, typer.Option(help="Seconds to run.")] = 120.0) -> None:
        """The pipeline locally (for now: a smoke run through Kafka and Cassandra)."""
        from chatlog import smoke
        from chatlog.settings import StackSettings, load

        del duration
        typer.echo(smoke.run(load(StackSettings)))
