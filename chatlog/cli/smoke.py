"""``chatlog smoke``: one chat event through Kafka and one row through Cassandra."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add ``smoke`` to ``app``."""

    @app.command()
    def smoke() -> None:
        """One chat event through Kafka and one row through Cassandra (a quick check of the stack)."""
        from chatlog import smoke as smoke_run
        from core.settings import StackSettings, load

        typer.echo(smoke_run.run(load(StackSettings)))
