"""``chatlog stack``: the local development stack, without Docker."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from chatlog.stack import manager
from core import maven
from core.settings import StackSettings, load

app = typer.Typer(
    help="The local stack on 127.0.0.1: Kafka (KRaft), Cassandra, InspIRCd.", no_args_is_help=True
)


def register(main: typer.Typer) -> None:
    """Add ``stack`` to the main app."""
    main.add_typer(app, name="stack")


console = Console()


def _settings() -> StackSettings:
    return load(StackSettings)


def _table(states: list[manager.ServiceState]) -> Table:
    table = Table("service", "state", "pid", "port", "RSS MiB")
    for s in states:
        colour = {"up": "green", "starting": "yellow", "foreign": "magenta"}.get(s.state, "red")
        table.add_row(
            s.name,
            f"[{colour}]{s.state}[/]",
            str(s.pid or "-"),
            str(s.port),
            f"{s.rss_mib:.0f}" if s.rss_mib else "-",
        )
    return table


@app.command()
def fetch() -> None:
    """Fetch the Maven artifacts (Kafka, Cassandra, the Spark Kafka source) into the cache."""
    settings = _settings()
    for bundle in (
        maven.KAFKA,
        maven.CASSANDRA,
        maven.spark_kafka_bundle(maven.installed_pyspark_version()),
    ):
        t0 = time.monotonic()
        lib = maven.fetch(bundle, settings.cache_dir)
        console.print(
            f"{bundle.name}: {len(list(lib.glob('*.jar')))} jars in {lib} ({time.monotonic() - t0:.1f}s)"
        )


@app.command()
def up() -> None:
    """Start the stack (idempotent), wait until each service answers, create topics and tables."""
    t0 = time.monotonic()
    states = manager.up(_settings(), report=console.print)
    console.print(_table(states))
    console.print(f"stack healthy in {time.monotonic() - t0:.1f}s")


@app.command()
def down(purge: Annotated[bool, typer.Option(help="Also delete all data and logs.")] = False) -> None:
    """Stop what `up` started; data is kept unless --purge."""
    manager.down(_settings(), purge=purge, report=console.print)


@app.command()
def status() -> None:
    """Each service's state, pid and resident memory."""
    states = manager.status(_settings())
    console.print(_table(states))
    if any(s.state != "up" for s in states):
        raise typer.Exit(1)


@app.command()
def logs(
    service: Annotated[str, typer.Argument(help="kafka, cassandra or inspircd")],
    follow: Annotated[bool, typer.Option("--follow", "-f")] = False,
    lines: Annotated[int, typer.Option("--lines", "-n")] = 50,
) -> None:
    """Show a service's log."""
    path = manager.service_log(_settings(), service)
    cmd = ["tail", f"-n{lines}", *(["-F"] if follow else []), path]
    if follow:
        os.execvp("tail", cmd)
    subprocess.run(cmd, check=False)
