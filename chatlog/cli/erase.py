"""``chatlog erase --user-id ID [--channel-id ID]`` / ``--channel-id ID``: delete every stored row of a user
(everywhere, or in one channel) or of a whole channel, audited (:mod:`store.erase`)."""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from core.settings import CassandraSettings
    from store.erase import ErasureReport

USER_ID_HELP = "A Twitch user id (digits)."
CHANNEL_ID_HELP = "A Twitch channel (room) id (digits)."


def actor() -> str:
    """Who runs the command, for the audit: ``cli:<OS user>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name for this uid (a container)
        return "cli:unknown"


@contextmanager
def cassandra(keyspace: str | None) -> Iterator[tuple[CassandraSettings, Any]]:
    """(settings, session) on the keyspace; Cassandra down or the keyspace missing: one line."""
    from core.cql import open_session, quiet_driver_logs
    from core.settings import KEYSPACE_OPTION, CassandraSettings, load

    settings = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
    quiet_driver_logs()
    cluster, session = open_session(settings, keyspace=settings.cassandra_keyspace)
    try:
        yield settings, session
    finally:
        cluster.shutdown()


def report_lines(report: ErasureReport) -> list[str]:
    """``erased user 123: N row(s)`` then a line per table with something deleted."""
    from store.erase import TABLES

    what = f"user {report.user_id}" if report.user_id is not None else f"channel {report.channel_id}"
    if report.user_id is not None and report.channel_id is not None:
        what += f" in channel {report.channel_id}"
    lines = [f"erased {what}: {report.total_rows} row(s)"]
    for table in TABLES:
        rows, partitions = report.rows[table], report.partitions[table]
        if rows or partitions:
            whole = f" ({partitions} partition(s) deleted whole)" if partitions else ""
            lines.append(f"  {table}: {rows} row(s){whole}")
    return lines


def run_erase(
    session: Any, keyspace: str, *, user_id: str | None, channel_id: str | None, as_json: bool
) -> ErasureReport:
    """Erase and print the report (text, or one JSON object)."""
    from store.erase import erase

    report = erase(session, keyspace, user_id=user_id, channel_id=channel_id, by=actor())
    if as_json:
        typer.echo(json.dumps(report.as_json()))
    else:
        typer.echo("\n".join(report_lines(report)))
    return report


def register(app: typer.Typer) -> None:
    """Add ``erase`` to ``app``."""

    @app.command("erase")
    def erase_command(
        user_id: Annotated[str | None, typer.Option("--user-id", help=USER_ID_HELP)] = None,
        channel_id: Annotated[str | None, typer.Option("--channel-id", help=CHANNEL_ID_HELP)] = None,
        as_json: Annotated[bool, typer.Option("--json", help="The report as one JSON object.")] = False,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """Delete every stored row of a user (--user-id; with --channel-id only in that channel), or of a
        whole channel (--channel-id alone), from every table, and record it in the consent audit. Safe to
        run again (after a failure it finishes the job; otherwise it deletes nothing). It does not opt
        anyone out: a replay can write the rows again (`chatlog optout add` does both)."""
        from consent.records import check_id
        from core.errors import ChatlogError

        if user_id is None and channel_id is None:
            raise ChatlogError("chatlog erase needs --user-id ID, --channel-id ID, or both")
        user_id = check_id("user", user_id) if user_id is not None else None
        channel_id = check_id("channel", channel_id) if channel_id is not None else None
        with cassandra(keyspace) as (settings, session):
            run_erase(
                session, settings.cassandra_keyspace, user_id=user_id, channel_id=channel_id, as_json=as_json
            )
