"""Commands of this package, registered on the main ``chatlog`` app by chatlog.commands."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this package's commands to ``app`` and its benchmarks to ``bench``."""

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
        from chatlog.errors import ChatlogError
        from chatlog.settings import load
        from sink.job import run_sink
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

        from chatlog.cql import quiet_driver_logs
        from chatlog.errors import ChatlogError
        from chatlog.settings import CassandraSettings, load
        from schemas.chat_event import encode
        from sink.reader import read_events, text_with_gaps
        from sink.times import parse_time

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

    @bench.command("sink")
    def bench_sink(
        events: Annotated[int, typer.Option(help="Events for the throughput run (0 = skip).")] = 150_000,
        rate: Annotated[int, typer.Option(help="Events/s for the latency run.")] = 5000,
        latency_s: Annotated[float, typer.Option(help="Seconds of the latency run (0 = skip).")] = 60.0,
        warmup_s: Annotated[
            float, typer.Option(help="Seconds of steady load before the latency run (not measured).")
        ] = 30.0,
        trigger: Annotated[str | None, typer.Option(help="Trigger interval of the latency run.")] = None,
        name: Annotated[str, typer.Option(help="Results file name under results/.")] = "bench_sink",
    ) -> None:
        """Sink throughput (Kafka -> Spark -> Cassandra) next to a raw driver insert, and latency."""
        from chatlog.settings import load
        from sink.bench import run_bench
        from sink.settings import SinkSettings

        typer.echo(
            run_bench(
                load(SinkSettings),
                events=events,
                rate=rate,
                latency_s=latency_s,
                warmup_s=warmup_s,
                trigger=trigger,
                name=name,
            )
        )
