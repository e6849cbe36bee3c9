"""``chatlog sink``: the streaming sink, or a bounded backfill (``--backfill --from T``)."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``sink`` to ``app``."""

    @app.command("sink")
    def sink_command(
        backfill: Annotated[bool, typer.Option("--backfill", help="Bounded replay of a time range.")] = False,
        start: Annotated[
            str | None,
            typer.Option("--from", help="Backfill start (Kafka record time): ISO-8601 or epoch ms."),
        ] = None,
        end: Annotated[
            str | None, typer.Option("--to", help="Backfill end, exclusive (default: now).")
        ] = None,
        keyspace: Annotated[
            str | None,
            typer.Option(help="Cassandra keyspace, created if missing (CHATLOG_CASSANDRA_KEYSPACE)."),
        ] = None,
        available_now: Annotated[
            bool, typer.Option("--available-now", help="Stream what Kafka holds now, then stop.")
        ] = False,
        deadletter: Annotated[
            bool,
            typer.Option(
                "--deadletter", help="Backfill: send invalid records to the dead-letter topic again."
            ),
        ] = False,
        master: Annotated[str | None, typer.Option(help="Spark master (CHATLOG_SPARK_MASTER).")] = None,
        checkpoint: Annotated[
            str | None,
            typer.Option(help="Checkpoint location, path or Hadoop URI (CHATLOG_SINK_CHECKPOINT)."),
        ] = None,
        metrics_port: Annotated[
            int | None, typer.Option(help="Prometheus port, 0 = off (CHATLOG_SINK_METRICS_PORT).")
        ] = None,
    ) -> None:
        """The Spark job: chat events from Kafka into Cassandra, one row per event; or a backfill."""
        from core.errors import ChatlogError
        from core.settings import load
        from sink.driver.job import run_sink
        from sink.settings import SinkSettings

        if backfill and start is None:
            raise ChatlogError("--backfill needs --from T")
        if start is not None and not backfill:
            raise ChatlogError("--from needs --backfill")
        settings = load(
            SinkSettings,
            cassandra_keyspace=keyspace,
            spark_master=master,
            sink_checkpoint=checkpoint,
            sink_metrics_port=metrics_port,
        )
        typer.echo(
            run_sink(
                settings,
                backfill_from=start,
                backfill_to=end,
                available_now=available_now,
                deadletter=deadletter,
            )
        )
