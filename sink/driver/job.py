"""The sink as one entry file, for ``spark-submit`` on a cluster (``chatlog sink`` runs the same code).

    spark-submit --master spark://host:7077 --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 \\
        sink/driver/job.py [--available-now] [--keyspace K]
    spark-submit ... sink/driver/job.py --backfill --from 2026-11-21T00:00:00Z [--to T] [--keyspace K]

Settings come from ``CHATLOG_*`` variables (see sink/settings.py). On a non-local master the chatlog
packages are shipped to the executors (their Python needs cassandra-driver, confluent-kafka, msgspec
and pydantic-settings installed).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the chatlog packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.errors import ChatlogError
from core.settings import load
from sink.settings import SinkSettings


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

    if backfill_from is not None:
        from sink.driver import backfill

        end = parse_time(backfill_to) if backfill_to is not None else None
        return backfill.run(settings, parse_time(backfill_from), end, deadletter=deadletter).summary()
    if backfill_to is not None:
        raise ChatlogError("--to needs --backfill --from")
    from sink.driver import stream

    totals = stream.run(settings, available_now=available_now)
    w = totals.written
    return (
        f"sink stopped after {totals.batches} batches: read {totals.events_in} events "
        f"({totals.invalid} invalid), dropped {totals.duplicates} duplicates, "
        f"wrote {w.events} events as {w.rows_total} rows, {w.deadletters} dead letters"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sink/driver/job.py", description="chatlog sink (Spark job)")
    parser.add_argument("--backfill", action="store_true", help="bounded replay of a time range")
    parser.add_argument("--from", dest="start", help="backfill start: ISO-8601 or epoch ms")
    parser.add_argument("--to", dest="end", help="backfill end (exclusive); default now")
    parser.add_argument("--keyspace", help="Cassandra keyspace (default CHATLOG_CASSANDRA_KEYSPACE)")
    parser.add_argument("--available-now", action="store_true", help="stream what Kafka holds, then stop")
    parser.add_argument(
        "--deadletter", action="store_true", help="backfill: dead-letter invalid records again"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.backfill and not args.start:
            raise ChatlogError("--backfill needs --from T")
        settings = load(SinkSettings, cassandra_keyspace=args.keyspace)
        print(
            run_sink(
                settings,
                backfill_from=args.start if args.backfill else None,
                backfill_to=args.end,
                available_now=args.available_now,
                deadletter=args.deadletter,
            )
        )
    except ChatlogError as exc:
        print(f"chatlog sink: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
