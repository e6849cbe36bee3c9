"""``chatlog pack``: pack the user-months that ended into one cell each (:mod:`sink.pack`), so a read of a
past month is one cell instead of one row per message. Safe to run at any time and again (a cron job)."""

from __future__ import annotations

from typing import Annotated

import typer

from schemas.packed_month import LEVEL


def register(app: typer.Typer) -> None:
    """Add ``pack`` to ``app``."""

    @app.command("pack")
    def pack_command(
        settle_minutes: Annotated[
            float,
            typer.Option(
                min=0,
                help="Leave a month partition written to within this long for a later run (a writer's "
                "clock may be behind by less than this), and pack only months that ended this long ago.",
            ),
        ] = 60.0,
        concurrency: Annotated[int, typer.Option(min=1, max=256, help="Partitions packed at once.")] = 8,
        level: Annotated[
            int,
            typer.Option(
                min=1,
                max=22,
                help="Zstandard level of the frames (19: the smallest frames at ~90 us of CPU a row; 9: "
                "~10 % larger at ~3 us). Reads cost the same at any level.",
            ),
        ] = LEVEL,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
        repack: Annotated[
            bool,
            typer.Option(
                "--repack",
                help="Also write anew, in the current frame version, the months packed in an older one "
                "(read as they are, but without what the newer version keeps for readers).",
            ),
        ] = False,
    ) -> None:
        """Pack every user-month that is over: its rows become one compressed cell of the same partition
        (reads of past months get cheaper, nothing is lost; late rows are merged on read and packed by
        the next run)."""
        from cassandra import DriverException
        from cassandra.cluster import NoHostAvailable

        from chatlog.cli.erase import cassandra
        from core.errors import ChatlogError, one_line
        from sink.pack import pack_months

        with cassandra(keyspace) as (settings, session):
            try:
                report = pack_months(
                    session,
                    settings.cassandra_keyspace,
                    settle_s=settle_minutes * 60,
                    concurrency=concurrency,
                    level=level,
                    repack=repack,
                    tell=typer.echo,
                )
            except (DriverException, NoHostAvailable) as exc:
                raise ChatlogError(
                    f"packing user-months in keyspace {settings.cassandra_keyspace}: {one_line(exc)}"
                ) from None
        typer.echo(report.summary())
