"""``chatlog stack``: the local development stack, without Docker."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from core import maven
from core.settings import StackSettings, load
from lab.stack import manager
from lab.stack.cluster import cluster_env

app = typer.Typer(
    help="The local stack on 127.0.0.1: Kafka (KRaft), Cassandra, InspIRCd; with --nodes 3, a cluster of "
    "three Kafka brokers, three Cassandra nodes and a Spark standalone master with its workers.",
    no_args_is_help=True,
)

Nodes = Annotated[
    int,
    typer.Option(
        "--nodes",
        min=1,
        help="1: the single-node stack; 3: the multi-node stack (its own ports, loopback addresses "
        "127.0.0.11.. and state in <state_dir>/cluster).",
    ),
]


def register(main: typer.Typer) -> None:
    """Add ``stack`` to the main app."""
    main.add_typer(app, name="stack")


console = Console()


def _settings(nodes: int = 1) -> StackSettings:
    if nodes != 1:  # the driver logs each node of a ring it discovers, at every check
        logging.getLogger("cassandra.cluster").setLevel(logging.WARNING)
    return load(StackSettings)


def _table(states: list[manager.ServiceState]) -> Table:
    table = Table("service", "state", "pid", "port", "RSS MiB")
    for s in states:
        colour = {"up": "green", "starting": "yellow", "foreign": "magenta"}.get(s.state, "red")
        table.add_row(
            s.name,
            f"[{colour}]{s.state}[/]",
            str(s.pid or "-"),
            str(s.port) if s.host == "127.0.0.1" else f"{s.host}:{s.port}",
            f"{s.rss_mib:.0f}" if s.rss_mib else "-",
        )
    if len(states) > 3:  # the multi-node stack: what it takes in all
        total = sum(s.rss_mib or 0 for s in states)
        table.add_row("total", "", "", "", f"{total:.0f}")
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
def up(nodes: Nodes = 1) -> None:
    """Start the stack (idempotent), wait until each service answers, create topics and tables."""
    t0 = time.monotonic()
    states = manager.up(_settings(nodes), report=console.print, nodes=nodes)
    console.print(_table(states))
    console.print(f"stack healthy in {time.monotonic() - t0:.1f}s")


@app.command()
def down(
    purge: Annotated[bool, typer.Option(help="Also delete all data and logs.")] = False, nodes: Nodes = 1
) -> None:
    """Stop what `up` started; data is kept unless --purge."""
    manager.down(_settings(nodes), purge=purge, report=console.print, nodes=nodes)


@app.command()
def status(nodes: Nodes = 1) -> None:
    """Each service's (with --nodes 3: each node's) state, pid and resident memory."""
    states = manager.status(_settings(nodes), nodes=nodes)
    console.print(_table(states))
    if any(s.state != "up" for s in states):
        raise typer.Exit(1)


@app.command()
def env(nodes: Nodes = 3) -> None:
    """The CHATLOG_* variables that point the pipeline (ingest, sink, serve, demo) at the multi-node
    stack, as shell exports: `eval "$(chatlog stack env --nodes 3)"`."""
    for name, value in cluster_env(_settings(), nodes).items():
        console.print(f"export {name}={shlex.quote(value)}", highlight=False, soft_wrap=True)


@app.command()
def logs(
    service: Annotated[
        str, typer.Argument(help="kafka, cassandra or inspircd; with --nodes 3: kafka-1, cassandra-2, ...")
    ],
    follow: Annotated[bool, typer.Option("--follow", "-f")] = False,
    lines: Annotated[int, typer.Option("--lines", "-n")] = 50,
    nodes: Nodes = 1,
) -> None:
    """Show a service's log."""
    path = manager.service_log(_settings(), service, nodes=nodes)
    cmd = ["tail", f"-n{lines}", *(["-F"] if follow else []), path]
    if follow:
        os.execvp("tail", cmd)
    subprocess.run(cmd, check=False)
