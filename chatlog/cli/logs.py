"""``chatlog logs CHANNEL``: a channel's (or a user's) stored chat, in time order, with the gaps in coverage
marked; by login or by Twitch id, a renamed channel or user being one history."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent

FORMATS = ("text", "ndjson", "raw")


def raw_line(raw: str, *, terminal: bool) -> str:
    """An IRC line as ``--format raw`` prints it: exact into a file or a pipe; on a terminal with its
    control characters made visible (:mod:`serve.terminal`, as ``ls`` does with names), so a chat line
    cannot move the cursor, recolour or rewrite what the reader sees."""
    if not terminal:
        return raw
    from serve.terminal import escape_controls

    return escape_controls(raw)


def register(app: typer.Typer) -> None:
    """Add ``logs`` to ``app``."""

    @app.command("logs")
    def logs_command(
        channel: Annotated[
            str | None, typer.Argument(help="Channel login (with or without #); or give --channel-id.")
        ] = None,
        channel_id: Annotated[
            str | None, typer.Option("--channel-id", help="The channel's Twitch id (room-id) instead.")
        ] = None,
        user: Annotated[
            str | None, typer.Option(help="Only this user's events (a login; any of a renamed user's).")
        ] = None,
        user_id: Annotated[
            str | None, typer.Option("--user-id", help="Only the events of the user with this Twitch id.")
        ] = None,
        since: Annotated[str | None, typer.Option(help="From this time: ISO-8601 or epoch ms.")] = None,
        until: Annotated[str | None, typer.Option(help="Before this time: ISO-8601 or epoch ms.")] = None,
        reverse: Annotated[bool, typer.Option("--reverse", help="Newest first.")] = False,
        limit: Annotated[int | None, typer.Option(help="At most this many events.")] = None,
        output_format: Annotated[
            str,
            typer.Option(
                "--format",
                help="text, ndjson (every field) or raw (the IRC lines; on a terminal, controls escaped).",
            ),
        ] = "text",
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """Read a channel's log back from Cassandra (and, for the present, what Kafka holds that the sink
        has not written yet), in time order."""
        import sys

        from chatlog.cli.log_reader import LogReader, text_with_gaps
        from core.cql import quiet_driver_logs
        from core.settings import KEYSPACE_OPTION, CassandraSettings, load
        from serve.settings import FreshSettings

        _check_options(channel, channel_id, user, user_id, limit, output_format)
        since_ms, until_ms = _time_range(since, until)
        settings = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
        fresh = load(FreshSettings)
        quiet_driver_logs()  # a failure is reported below in one line, not as the driver's tracebacks
        out = sys.stdout
        with LogReader(settings, fresh) as reader:
            named = reader.channel(channel, channel_id)
            who = reader.user(user, user_id)
            events = reader.events(
                named, user=who, since_ms=since_ms, until_ms=until_ms, reverse=reverse, limit=limit
            )
            if output_format == "text":  # a gap in coverage is marked where it falls
                lines = text_with_gaps(
                    settings, str(named), events, since_ms, until_ms, reverse=reverse, trailing=limit is None
                )
            else:
                lines = _event_lines(events, output_format, out)
            count = _write_lines(out, lines)
        out.flush()
        if count == 0:
            whose = f" from {who}" if who is not None else ""
            when = " in that time range" if since or until else ""
            typer.echo(f"nothing stored for #{named}{whose}{when}", err=True)


def _check_options(
    channel: str | None,
    channel_id: str | None,
    user: str | None,
    user_id: str | None,
    limit: int | None,
    output_format: str,
) -> None:
    """A :class:`ChatlogError` for the first of the options that is wrong, or that goes with another it
    excludes, before anything is read."""
    from core.errors import ChatlogError
    from core.logins import login_of

    if output_format not in FORMATS:
        raise ChatlogError(f"--format must be text, ndjson or raw, not {output_format[:40]!r}")
    if (channel is None) == (channel_id is None):
        raise ChatlogError("give a CHANNEL login or --channel-id ID (one of them)")
    if user is not None and user_id is not None:
        raise ChatlogError("give --user or --user-id, not both")
    for value, flag in ((channel, "CHANNEL"), (channel_id, "--channel-id"), (user, "--user")):
        if value is not None and not login_of(value):
            raise ChatlogError(f"{flag} is empty")
    if user_id is not None and not user_id.strip():
        raise ChatlogError("--user-id is empty")
    if limit is not None and limit < 0:
        raise ChatlogError(f"--limit must be 0 or more, not {limit}")


def _time_range(since: str | None, until: str | None) -> tuple[int | None, int | None]:
    """``--since`` and ``--until`` in epoch ms (None: not given); a :class:`ChatlogError` for a time that is
    not one, or a range that is empty."""
    from core.errors import ChatlogError
    from core.times import parse_time

    since_ms = parse_time(since, "--since") if since is not None else None  # "" is no time: an error
    until_ms = parse_time(until, "--until") if until is not None else None
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        raise ChatlogError("--until must be after --since")  # as `chatlog coverage` says it
    return since_ms, until_ms


def _event_lines(events: Iterable[ChatEvent], output_format: str, out: TextIO) -> Iterator[str]:
    """The lines of ``--format ndjson`` (each event with every field) or ``raw`` (its IRC line, as
    :func:`raw_line` prints it to ``out``)."""
    from schemas.chat_event import encode

    if output_format == "ndjson":
        for event in events:
            yield encode(event).decode()
    else:
        terminal = out.isatty()
        for event in events:
            yield raw_line(event.raw, terminal=terminal)


def _write_lines(out: TextIO, lines: Iterable[str]) -> int:
    """Each of ``lines`` written to ``out`` as it comes; how many."""
    count = 0
    for line in lines:
        out.write(line + "\n")
        count += 1
    return count
