"""``chatlog import`` and ``chatlog bench parse`` (owned with the parser)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

EXIT_NOTHING_READ = 1
"""Nothing read, nothing imported (every line a problem), or no Kafka/topics."""
EXIT_UNDELIVERED = 3


def register(app: typer.Typer) -> None:
    """Add the import command to ``app`` and the parse benchmark to ``bench``."""

    @app.command("import")
    def import_(
        file: Annotated[str, typer.Argument(help="File of raw IRC lines, one per line; '-' reads stdin.")],
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Print the chat events as ndjson; send nothing.")
        ] = False,
        bootstrap_servers: Annotated[
            str | None, typer.Option(help="Kafka bootstrap servers (CHATLOG_KAFKA_BOOTSTRAP_SERVERS).")
        ] = None,
    ) -> None:
        """Raw IRC lines into the messages topic; problems to stderr and the dead-letter topic.

        Lines may start with a '[YYYY-MM-DD HH:MM:SS] ' timestamp (UTC unless it has an offset). A UTF-8
        byte order mark is ignored. Exit 0 when the lines were imported, also if some were problems (the
        summary counts them and their dead letters); 1 if nothing could be read, every line with content
        was a problem, or Kafka/topics are missing; 3 if some records were not delivered.
        """
        from core.settings import KafkaSettings, load
        from ingest.importer import ImportFailed, import_file

        def report(message: str) -> None:
            print(message, file=sys.stderr, flush=True)

        settings = load(KafkaSettings, kafka_bootstrap_servers=bootstrap_servers)
        try:
            stats = import_file(
                file, dry_run=dry_run, settings=settings, out=sys.stdout.buffer, report=report
            )
        except ImportFailed as exc:
            report(f"chatlog: error: {exc}")
            raise typer.Exit(EXIT_NOTHING_READ) from None
        report(stats.summary(file))
        if stats.failed:
            raise typer.Exit(EXIT_UNDELIVERED)
