"""``chatlog demo``: the whole pipeline on the local stack, with a kill, a scale-out and a report."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""

    @app.command()
    def demo(
        duration: Annotated[float, typer.Option(help="Seconds of simulated chat.")] = 120.0,
        channels: Annotated[int, typer.Option(min=1, max=100_000, help="Channels to register.")] = 500,
        rate: Annotated[float, typer.Option(help="Messages per second sent in total.")] = 1000.0,
        nodes: Annotated[
            int,
            typer.Option(
                min=1,
                help="1: the local stack, the sink in local[2]. 3: the multi-node stack of `chatlog stack up "
                "--nodes 3` (RF 3 topics and keyspace, its IRC server, the sink on its Spark master).",
            ),
        ] = 1,
    ) -> None:
        """The whole pipeline locally: chatters, 2x2 ingesters, the sink; a kill, a scale-out, a report."""
        from rich.console import Console

        from core.settings import StackSettings, load
        from lab.demo.run import demo_config, execute, on_cluster
        from lab.stack.cluster import Layout

        stack = load(StackSettings)
        if nodes == 1:
            report = execute(stack, demo_config(channels, rate, duration), Console())
        else:
            layout = Layout(stack, nodes)
            config = on_cluster(demo_config(channels, rate, duration), layout)
            report = execute(layout.client_settings(), config, Console())
        if report.lost:
            raise typer.Exit(1)
