"""``chatlog logs CHANNEL``: a channel's stored chat, in time order, with the gaps in coverage marked."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``logs`` to ``app``."""

    @app.command("logs")
    def logs_command(
        channel: Annotated[str, typer.Argument(help="Channel login (with or without #).")],
        user: Annotated[str | None, typer.Option(help="Only this user's events.")] = None,
        since: Annotated[str | None, typer.Option(help="From this time: ISO-8601 or epoch ms.")] = None,
        until: Annotated[str | None, typer.Option(help="Before this time: ISO-8601 or epoch ms.")] = None,
        output_format: Annotated[str, typer.Option("--format", help="text or ndjson.")] = "text",
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """Read a channel's log back from Cassandra, in time order."""
        import sys

        from core.cql import quiet_driver_logs
        from core.errors import ChatlogError
        from core.settings import CassandraSettings, load
        from core.times import parse_time
        from schemas.chat_event import encode
        from serve.logs import read_events, text_with_gaps

        if output_format not in ("text", "ndjson"):
            raise ChatlogError(f"--format must be text or ndjson, not {output_format[:40]!r}")
        since_ms = parse_time(since, "--since") if since else None
        until_ms = parse_time(until, "--until") if until else None
        settings = load(CassandraSettings, cassandra_keyspace=keyspace)
        quiet_driver_logs()  # a failure is reported below in one line, not as the driver's tracebacks
        count = 0
        out = sys.stdout
        events = read_events(settings, channel, user=user, since_ms=since_ms, until_ms=until_ms)
        if output_format == "ndjson":
            for event in events:
                out.write(encode(event).decode() + "\n")
                count += 1
        else:  # text: a gap in coverage is marked where it falls
            for line in text_with_gaps(settings, channel, events, since_ms, until_ms):
                out.write(line + "\n")
                count += 1
        out.flush()
        if count == 0:
            who = f" from {user}" if user else ""
            when = " in that time range" if since or until else ""
            typer.echo(f"nothing stored for #{channel.lstrip('#').lower()}{who}{when}", err=True)
