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
        rate: Annotated[float, typer.Option(help="Messages per second sent in total.")] = 2000.0,
    ) -> None:
        """The whole pipeline locally: chatters, 2x2 ingesters, the sink; a kill, a scale-out, a report."""
        from rich.console import Console

        from chatlog.demo.run import demo_config, execute
        from core.settings import StackSettings, load

        report = execute(load(StackSettings), demo_config(channels, rate, duration), Console())
        if report.lost:
            raise typer.Exit(1)
