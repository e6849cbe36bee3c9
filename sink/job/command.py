"""The sink's command line, defined once: the entry file of ``spark-submit`` and ``chatlog sink``.

    spark-submit --master spark://host:7077 --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 \\
        sink/job/command.py [--available-now] [--keyspace K]
    spark-submit ... sink/job/command.py --backfill --from 2026-11-21T00:00:00Z [--to T] [--keyspace K]

:func:`command` is the typer command; ``chatlog sink`` registers it as it is (chatlog/cli/sink.py) and
:func:`main` runs it for ``spark-submit``, so both take the same options. Settings come from
``CHATLOG_*`` variables (see sink/settings.py); an option overrides its variable. On a non-local master
the chatlog packages are shipped to the executors (their Python needs cassandra-driver,
confluent-kafka, msgspec and pydantic-settings installed).
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path
from typing import Annotated

if __package__ in (None, ""):  # run as a file by spark-submit: make the chatlog packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import typer

from core.errors import ChatlogError
from core.settings import load
from sink.settings import SinkSettings

PROG = "sink/job/command.py"


def run_sink(
    settings: SinkSettings,
    *,
    backfill_from: str | None = None,
    backfill_to: str | None = None,
    available_now: bool = False,
    deadletter: bool = False,
) -> str:
    """Run the streaming sink, or a backfill when ``backfill_from`` is given; returns the summary."""
    from core.times import parse_time

    if backfill_to is not None and backfill_from is None:
        raise ChatlogError("--to needs --backfill --from")
    start = parse_time(backfill_from, "--from") if backfill_from is not None else None  # before any service
    end = parse_time(backfill_to, "--to") if backfill_to is not None else None
    preflight(settings)

    if start is not None:
        from sink.job import backfill

        return backfill.run(settings, start, end, deadletter=deadletter).summary()
    from sink.job import stream

    totals = stream.run(settings, available_now=available_now)
    w = totals.written
    return (
        f"sink stopped after {totals.batches} batches: read {totals.events_in} events "
        f"({totals.invalid} invalid), dropped {totals.duplicates} duplicates, "
        f"wrote {w.events} events as {w.rows_total} rows, {w.deadletters} dead letters"
        + (
            f", {w.optout_dropped} events of opted-out users or channels not written"
            if w.optout_dropped
            else ""
        )
    )


def preflight(settings: SinkSettings) -> None:
    """Kafka and Cassandra answer, before Spark starts: either one down (or refusing the login or TLS) is
    one line naming its settings within seconds (:class:`ChatlogError`), not minutes of Spark retries and
    Java or driver stack traces. A service lost later is retried (CHATLOG_SINK_CASSANDRA_RETRY_S)."""
    from core.cql import open_session
    from core.kafka_probe import probe

    topics = probe(settings).topics
    if settings.topic_messages not in topics:
        raise ChatlogError(
            f"topic {settings.topic_messages} does not exist in Kafka at {settings.kafka_bootstrap_servers} "
            "(CHATLOG_TOPIC_MESSAGES; `chatlog init` creates the topics)"
        )
    if settings.topic_optout not in topics:
        raise ChatlogError(
            f"the opt-out topic {settings.topic_optout} does not exist in Kafka at "
            f"{settings.kafka_bootstrap_servers} (CHATLOG_TOPIC_OPTOUT; `chatlog init` creates the topics)"
        )
    driver_log = logging.getLogger("cassandra")
    level = driver_log.level
    driver_log.setLevel(logging.CRITICAL)  # a refused connection is one line, not the driver's tracebacks
    try:
        cluster, _session = open_session(settings)
        cluster.shutdown()
    finally:
        driver_log.setLevel(level)


def command(
    backfill: Annotated[bool, typer.Option("--backfill", help="Bounded replay of a time range.")] = False,
    start: Annotated[
        str | None,
        typer.Option("--from", help="Backfill start (Kafka record time): ISO-8601 or epoch ms."),
    ] = None,
    end: Annotated[str | None, typer.Option("--to", help="Backfill end, exclusive (default: now).")] = None,
    keyspace: Annotated[
        str | None,
        typer.Option(help="Cassandra keyspace, created if missing (CHATLOG_CASSANDRA_KEYSPACE)."),
    ] = None,
    available_now: Annotated[
        bool, typer.Option("--available-now", help="Stream what Kafka holds now, then stop.")
    ] = False,
    deadletter: Annotated[
        bool,
        typer.Option("--deadletter", help="Backfill: send invalid records to the dead-letter topic again."),
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


def app() -> typer.Typer:
    """:func:`command` as a one-command typer app (the spark-submit entry)."""
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    one.command()(command)
    return one


def main(argv: list[str] | None = None) -> int:
    """Run :func:`command` with ``argv`` (default: the process' arguments); returns the exit code.

    A usage mistake exits 2 with click's message; a :class:`ChatlogError` is one line on stderr, exit 2.
    """
    from core import redact
    from core.log_setup import log_to_stderr

    log_to_stderr()
    secrets = redact.install().secrets  # as `chatlog`: no secret's value in any line this prints
    try:
        app()(args=argv, prog_name=PROG)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except ChatlogError as exc:
        print(f"chatlog sink: error: {redact.redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    except Exception:  # a bug: its traceback, but never a secret's value in it
        print(redact.redact(traceback.format_exc(), secrets), end="", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
