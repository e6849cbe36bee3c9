"""``chatlog pack``: the blocks of every channel-day and user-month that ended packed into one
(:mod:`store.pack`), so a read of a past day or month is one block instead of one per micro-batch, and the
bytes shrink. Safe to run at any time and again (a cron job)."""

from __future__ import annotations

from typing import Annotated

import typer

from store.frame import PACKED_LEVEL


def register(app: typer.Typer) -> None:
    """Add ``pack`` to ``app``."""

    @app.command("pack")
    def pack_command(
        settle_minutes: Annotated[
            float,
            typer.Option(
                min=0,
                help="Leave a partition written to within this long for a later run (a writer's clock may "
                "be behind by less than this), and pack only days and months that ended this long ago.",
            ),
        ] = 60.0,
        concurrency: Annotated[int, typer.Option(min=1, max=256, help="Partitions packed at once.")] = 8,
        level: Annotated[
            int,
            typer.Option(
                min=1,
                max=22,
                help="Zstandard level of the packed frames (higher: smaller frames, more CPU to pack). "
                "Reads cost the same at any level.",
            ),
        ] = PACKED_LEVEL,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """Pack every channel-day and user-month that is over, and today's and this month's up to the settle
        time: its blocks become one (reads get cheaper, the bytes fewer, nothing is lost; late blocks are
        merged on read and packed by the next run). Run it hourly."""
        from cassandra import DriverException
        from cassandra.cluster import NoHostAvailable

        from chatlog.cli.erase import cassandra
        from core.errors import ChatlogError, one_line
        from store.pack import pack
        from store.requests import CassandraWriteError

        with cassandra(keyspace) as (settings, session):
            try:
                report = pack(
                    session,
                    settings.cassandra_keyspace,
                    settle_s=settle_minutes * 60,
                    concurrency=concurrency,
                    level=level,
                )
            except (DriverException, NoHostAvailable, CassandraWriteError) as exc:
                raise ChatlogError(
                    f"packing keyspace {settings.cassandra_keyspace}: {one_line(exc)}"
                ) from None
        typer.echo(report.summary())
