"""``chatlog fill CHANNEL --from URL``: the times no logger of ours covered, filled with a peer's lines."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from chatlog.cli.reporting import LinesBar
from core.times import now_ms

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.progress import TaskID

    from chatlog.fill.result import Answer, FillResult
    from core.settings import CassandraSettings, KafkaSettings

EXIT_NOTHING_FILLED = 1
"""There was something to fill and the peer filled none of it (down, too slow, errors, garbage)."""
EXIT_UNDELIVERED = 3
"""Some lines were not delivered to Kafka: the rest was not recorded as filled."""
EXIT_STOPPED = 4
"""The peer went away midway (or asked to wait too long): what was filled is recorded; fill again."""


class FillProgress(LinesBar):
    """The bar of a fill: days asked / to ask, lines, lines/s, and what the fill waits for."""

    def __init__(self) -> None:
        super().__init__("days")
        self.task: TaskID = self.progress.add_task(
            "asking the peer for its days", total=None, lines=0, rate=0.0
        )

    def planned(self, days: int) -> None:
        self.clock_from_now()
        self.progress.update(self.task, total=days, description="")

    def answered(self, answer: Answer) -> None:
        self.read(answer.taken.lines, advance=1, description="")

    def waiting(self, seconds: float, why: str) -> None:
        self.progress.update(self.task, description=f"the peer {why}: asking again in {seconds:.0f} s")


Peer = Annotated[
    str,
    typer.Option(
        "--from",
        help="The peer: base URL of a justlog, rustlog or chatlog instance that logged the channel.",
        show_default=False,
    ),
]
Since = Annotated[
    str | None, typer.Option(help="From this time: ISO-8601 or epoch ms (default: 24 hours ago).")
]
AllDays = Annotated[
    bool, typer.Option("--all", help="Every day the peer lists (instead of --since/--until).")
]
ChannelId = Annotated[
    str | None,
    typer.Option(help="Ask by Twitch channel id (/channelid/ID/...), for peers that answer only so."),
]
Timeout = Annotated[
    float, typer.Option(help="Seconds to wait for the peer to connect, and between two reads.")
]
Patience = Annotated[
    float, typer.Option(help="Seconds to keep asking a peer that went away midway before stopping.")
]
ShowProgress = Annotated[
    bool | None, typer.Option(help="Show a progress bar (default: when stderr is a terminal).")
]
Servers = Annotated[
    str | None, typer.Option(help="Kafka bootstrap servers (CHATLOG_KAFKA_BOOTSTRAP_SERVERS).")
]


def register(app: typer.Typer) -> None:
    @app.command("fill")
    def fill_command(
        channel: Annotated[str, typer.Argument(help="Channel login (with or without #).")],
        peer: Peer,
        since: Since = None,
        until: Annotated[str | None, typer.Option(help="Until this time (default: now).")] = None,
        all_days: AllDays = False,
        channel_id: ChannelId = None,
        timeout: Timeout = 30.0,
        patience: Patience = 120.0,
        progress: ShowProgress = None,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
        bootstrap_servers: Servers = None,
    ) -> None:
        """Fill a channel's times no logger of ours covered, from a peer.

        The times in the range that no logger of ours covered: the coverage
        ledger's gaps, and the time before the channel was first logged here
        (all of it for a channel never logged here), except what was filled from
        this peer already. Asks the peer which days it has (GET
        URL/list?channel=C), then one request per such UTC day (GET
        URL/channel/C/Y/M/D?raw&from=UNIX&to=UNIX), imports the lines of the
        channel in those times as `chatlog import` does (lines of another
        channel, outside the times asked, or not IRC are left out and counted),
        and records each day in the ledger as soon as its lines are delivered
        (`chatlog coverage` and the page show which peer filled what). Stopped
        and started again, a fill asks only what is not filled yet; lines keep
        their ids: nothing is stored twice. A peer that answers 429 or 503 is
        waited for (Retry-After); one that goes away midway is asked again for
        --patience seconds.

        Exit 0 when something was filled or there was nothing to fill; 1 when
        the peer filled nothing (down, too slow, HTTP errors, garbage: one line
        says why); 2 when the ledger or Kafka cannot be used; 3 when lines were
        not delivered; 4 when the peer went away midway (what was filled is
        recorded: fill again for the rest).
        """
        from core.errors import ChatlogError
        from core.logins import login_of
        from core.settings import KEYSPACE_OPTION, CassandraSettings, KafkaSettings, load
        from core.times import time_window

        name = login_of(channel)
        if not name:
            raise ChatlogError("CHANNEL is empty")
        if not timeout > 0:
            raise ChatlogError("--timeout must be more than 0 seconds")
        if patience < 0:
            raise ChatlogError("--patience must be 0 seconds or more")
        if all_days and (since is not None or until is not None):
            raise ChatlogError("--all takes every day the peer lists: leave out --since and --until")
        since_ms, until_ms = time_window(since, until, now_ms=now_ms())
        cassandra = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
        kafka = load(
            KafkaSettings,
            kafka_bootstrap_servers=bootstrap_servers,
            options={"kafka_bootstrap_servers": "--bootstrap-servers"},
        )
        run_fill(
            name,
            peer,
            (None if all_days else since_ms, until_ms),
            settings=(kafka, cassandra),
            channel_id=channel_id.strip() if channel_id else None,
            timing=(timeout, patience),
            progress=sys.stderr.isatty() if progress is None else progress,
        )


def run_fill(
    channel: str,
    peer: str,
    window: tuple[int | None, int],
    *,
    settings: tuple[KafkaSettings, CassandraSettings],
    channel_id: str | None,
    timing: tuple[float, float],
    progress: bool,
) -> None:
    """The fill behind the command: run with a progress bar or without, then its lines and exit code."""
    from chatlog.cli.reporting import reporter
    from chatlog.fill.run import fill

    bar = FillProgress() if progress else None
    report = reporter(bar)

    kafka, cassandra = settings
    if bar is not None:
        bar.progress.start()
    try:
        result = fill(
            channel,
            peer,
            *window,
            kafka=kafka,
            cassandra=cassandra,
            report=report,
            channel_id=channel_id,
            timeout_s=timing[0],
            patience_s=timing[1],
            watcher=bar,
        )
    finally:
        if bar is not None:
            bar.progress.stop()
    finish(result, report)


def finish(result: FillResult, say: Callable[[str], None]) -> None:
    """Say what the fill did (its failures, then its summary) and exit with the code that tells it."""
    from chatlog.fill.result import failure_lines

    failures = failure_lines(result)
    if (result.answers or result.stopped) and not result.filled:
        say(f"chatlog: error: {failures[0]}")
        raise typer.Exit(EXIT_NOTHING_FILLED)
    for line in failures:
        say(line)
    say(result.summary())
    if result.undelivered:
        raise typer.Exit(EXIT_UNDELIVERED)
    if result.stopped:
        raise typer.Exit(EXIT_STOPPED)
