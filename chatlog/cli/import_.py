"""``chatlog import``: files, ``.gz`` files, directories and justlog trees of raw IRC lines into Kafka."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Annotated

import typer

from chatlog.cli.reporting import LinesBar

EXIT_NOTHING_READ = 1
"""Nothing read, nothing imported (every line a problem), or no Kafka/topics."""
EXIT_UNDELIVERED = 3
"""Some events were not delivered to Kafka (the summary counts them as failed)."""
EXIT_OUTPUT_CLOSED = 141
"""``--dry-run``'s output was closed by its reader: 128 + SIGPIPE, what a shell tool's exit says then."""


class BarProgress(LinesBar):
    """The bar of an import: files done / total, lines read, lines/s, the file being read."""

    def __init__(self) -> None:
        super().__init__("files", fit=True)
        self._room = 0  # columns left for the name of the file being read

    def start(self, files: int) -> None:
        self.clock_from_now()
        self.task = self.progress.add_task("", total=files, lines=0, rate=0.0)
        # the other columns take 68 characters and "done/total": a longer line would make rich drop columns
        self._room = self.progress.console.width - 69 - 2 * len(str(files))

    def file(self, path: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, description=path[-self._room :] if self._room >= 10 else "")

    def lines(self, count: int) -> None:
        self.read(count)

    def file_done(self) -> None:
        if self.task is not None:
            self.progress.advance(self.task)


def register(app: typer.Typer) -> None:
    """Add the import command to ``app``."""

    @app.command("import")
    def import_(
        paths: Annotated[
            list[str],
            typer.Argument(
                help="Files of raw IRC lines ('.gz' ones are gunzipped), directories (justlog trees "
                "among them) or '-' for stdin.",
                show_default=False,
            ),
        ],
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Print the chat events as ndjson; send nothing.")
        ] = False,
        justlog: Annotated[
            bool | None,
            typer.Option(
                "--justlog/--no-justlog",
                help="Read directories as justlog trees (only {channel_id}/{year}/{month}/{day}/"
                "channel.txt[.gz]), or read every file of them. Default: detected per directory.",
                show_default=False,
            ),
        ] = None,
        progress: Annotated[
            bool | None,
            typer.Option(
                "--progress/--no-progress",
                help="Progress bar on stderr. Default: if stderr is a terminal and a dry run's stdout isn't.",
                show_default=False,
            ),
        ] = None,
        bootstrap_servers: Annotated[
            str | None, typer.Option(help="Kafka bootstrap servers (CHATLOG_KAFKA_BOOTSTRAP_SERVERS).")
        ] = None,
    ) -> None:
        """Raw IRC lines into the messages topic; problems to stderr and the dead-letter topic.

        Directories are read in name order (numbers as numbers). A justlog tree is
        read channel by channel, day by day, from its channel files only: its user
        files hold the same lines again. Importing the same lines twice stores them
        once (ids come from the lines). Lines may start with a '[YYYY-MM-DD HH:MM:SS] '
        timestamp (UTC unless it has an offset). A UTF-8 byte order mark is ignored.
        A file that cannot be read or whose gzip data is corrupt is reported in one
        line and skipped.

        Exit 0 when lines were imported, also if some were problems (the summary
        counts them, their dead letters and the skipped files); 1 if nothing could
        be read, every line with content was a problem, a path is missing, or a
        topic is missing; 2 if Kafka is not reachable or refuses the login (one
        line naming the setting); 3 if some records were not delivered.
        """
        _import(
            paths, dry_run=dry_run, justlog=justlog, progress=progress, bootstrap_servers=bootstrap_servers
        )


def _import(
    paths: list[str],
    *,
    dry_run: bool,
    justlog: bool | None,
    progress: bool | None,
    bootstrap_servers: str | None,
) -> None:
    """The work of ``chatlog import`` (the command :func:`register` adds), given its options: the paths read
    into Kafka (or, with ``dry_run``, to stdout as ndjson), a progress bar or the reports on stderr, the
    summary last; :class:`typer.Exit` with the command's exit code when that is not 0."""
    from chatlog.cli.reporting import reporter
    from core.settings import KafkaSettings, load
    from ingest.importer import ImportFailed, OutputClosed, import_paths, paths_label

    if progress is None:
        progress = sys.stderr.isatty() and not (dry_run and sys.stdout.isatty())
    bar = BarProgress() if progress else None
    report = reporter(bar)

    settings = load(
        KafkaSettings,
        kafka_bootstrap_servers=bootstrap_servers,
        options={"kafka_bootstrap_servers": "--bootstrap-servers"},
    )
    try:
        with bar.progress if bar is not None else contextlib.nullcontext():
            stats = import_paths(
                paths,
                dry_run=dry_run,
                settings=settings,
                out=sys.stdout.buffer,
                report=report,
                justlog=justlog,
                progress=bar,
            )
    except ImportFailed as exc:
        print(f"chatlog: error: {exc}", file=sys.stderr, flush=True)
        raise typer.Exit(EXIT_NOTHING_READ) from None
    except OutputClosed:  # `--dry-run | head`: quiet, as a shell tool on SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error flushing at exit
        raise typer.Exit(EXIT_OUTPUT_CLOSED) from None
    print(stats.summary(paths_label(paths)), file=sys.stderr, flush=True)
    if stats.failed:
        raise typer.Exit(EXIT_UNDELIVERED)
