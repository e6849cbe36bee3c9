"""``chatlog fill CHANNEL --from URL``: a channel's gaps in coverage, filled with a peer's lines."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from core.times import now_ms

EXIT_NOTHING_FILLED = 1
"""There were gaps to fill and the peer filled none of them (down, too slow, errors, garbage)."""
EXIT_UNDELIVERED = 3
"""Some lines were not delivered to Kafka: nothing was recorded as filled."""


def register(app: typer.Typer) -> None:
    @app.command("fill")
    def fill_command(
        channel: Annotated[str, typer.Argument(help="Channel login (with or without #).")],
        peer: Annotated[
            str,
            typer.Option(
                "--from",
                help="The peer: base URL of a justlog, rustlog or chatlog instance that logged the channel.",
                show_default=False,
            ),
        ],
        since: Annotated[
            str | None, typer.Option(help="From this time: ISO-8601 or epoch ms (default: 24 hours ago).")
        ] = None,
        until: Annotated[str | None, typer.Option(help="Until this time (default: now).")] = None,
        channel_id: Annotated[
            str | None,
            typer.Option(help="Ask by Twitch channel id (/channelid/ID/...), for peers that answer only so."),
        ] = None,
        timeout: Annotated[
            float, typer.Option(help="Seconds to wait for the peer to connect, and between two reads.")
        ] = 30.0,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
        bootstrap_servers: Annotated[
            str | None, typer.Option(help="Kafka bootstrap servers (CHATLOG_KAFKA_BOOTSTRAP_SERVERS).")
        ] = None,
    ) -> None:
        """Fill the coverage ledger's gaps of a channel from a peer that logged it then.

        Asks the peer for exactly the gaps' times not filled from it yet, one request per
        UTC day (GET URL/channel/C/Y/M/D?raw&from=UNIX&to=UNIX), imports the lines of the
        channel in those times as `chatlog import` does (lines of another channel, outside
        the time asked, or not IRC are left out and counted), and records in the ledger
        that the times were filled from the peer (`chatlog coverage` shows it). Lines keep
        their ids: filling again stores nothing twice.

        Exit 0 when something was filled or there was nothing to fill; 1 when the peer
        filled nothing (down, too slow, HTTP errors, garbage: one line says why); 2 when
        the ledger or Kafka cannot be used; 3 when lines were not delivered.
        """
        from chatlog.fill.run import failure_lines, fill
        from core.errors import ChatlogError
        from core.logins import login_of
        from core.settings import KEYSPACE_OPTION, CassandraSettings, KafkaSettings, load
        from core.times import time_window

        name = login_of(channel)
        if not name:
            raise ChatlogError("CHANNEL is empty")
        if not timeout > 0:
            raise ChatlogError("--timeout must be more than 0 seconds")
        since_ms, until_ms = time_window(since, until, now_ms=now_ms())
        cassandra = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
        kafka = load(
            KafkaSettings,
            kafka_bootstrap_servers=bootstrap_servers,
            options={"kafka_bootstrap_servers": "--bootstrap-servers"},
        )

        def report(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        result = fill(
            name,
            peer,
            since_ms,
            until_ms,
            kafka=kafka,
            cassandra=cassandra,
            report=report,
            channel_id=channel_id.strip() if channel_id else None,
            timeout_s=timeout,
        )
        failures = failure_lines(result)
        if result.answers and not result.filled:
            report(f"chatlog: error: {failures[0]}")
            raise typer.Exit(EXIT_NOTHING_FILLED)
        for line in failures:
            report(line)
        report(result.summary())
        if result.undelivered:
            raise typer.Exit(EXIT_UNDELIVERED)
