"""``chatlog init``: create the topics and apply the CQL against the configured Kafka and Cassandra.

The one-shot step of a deployment (docker-compose's ``init`` service, the Kubernetes schema Job). Both
halves are idempotent: existing topics and tables are left alone. ``--wait`` retries while a service
is not reachable yet, so the step can start together with Kafka and Cassandra.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer

from core.errors import ChatlogError

T = TypeVar("T")


def retry_until(
    step: Callable[[], T],
    *,
    wait_s: float,
    interval_s: float = 3.0,
    report: Callable[[str], None] = typer.echo,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``step``; while it raises :class:`ChatlogError` and ``wait_s`` has not passed, try again."""
    deadline = clock() + wait_s
    while True:
        try:
            return step()
        except ChatlogError as exc:
            if clock() + interval_s > deadline:
                raise
            report(f"not ready yet ({exc}); retrying in {interval_s:.0f}s")
            sleep(interval_s)


def run_init(*, topics: bool, cql: bool, wait_s: float, report: Callable[[str], None] = typer.echo) -> None:
    """Create the topics and/or apply the schema with the settings from the environment."""
    from core import cql as cql_mod
    from core import kafka_admin
    from core.settings import CassandraSettings, KafkaSettings, load

    if not topics and not cql:
        raise ChatlogError("nothing to do: both --no-topics and --no-cql were given")
    if topics:
        kafka = load(KafkaSettings)
        created = retry_until(lambda: kafka_admin.ensure_topics(kafka), wait_s=wait_s, report=report)
        report(f"topics: created {', '.join(created)}" if created else "topics: all present")
    if cql:
        from store.schema import apply_schema

        cassandra = load(CassandraSettings)
        cql_mod.quiet_driver_logs()  # a failure is one line from apply_schema, not driver tracebacks
        with migration_progress() as progress:
            count = retry_until(
                lambda: apply_schema(cassandra, tell=report, progress=progress), wait_s=wait_s, report=report
            )
        report(f"cql: {count} statements applied to keyspace {cassandra.cassandra_keyspace}")


@contextmanager
def migration_progress() -> Iterator[Callable[[int, int, Any], None]]:
    """A progress bar of a migration (channel keys done of all, lines moved so far), shown once it starts."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("migrating channel keys"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[lines]} lines"),
        TimeRemainingColumn(),
        transient=False,
    )
    task: list[Any] = []

    def tell(done: int, total: int, report: Any) -> None:
        if not task:
            bar.start()
            task.append(bar.add_task("keys", total=total, lines=0))
        lines = f"{report.rows['channel']:,} channel + {report.rows['user']:,} user"
        bar.update(task[0], completed=done, lines=lines)

    try:
        yield tell
    finally:
        if task:
            bar.stop()


def register(app: typer.Typer) -> None:
    """Add the ``init`` command to ``app``."""

    @app.command("init")
    def init(
        topics: Annotated[bool, typer.Option(help="Create the Kafka topics of schemas/topics.toml.")] = True,
        cql: Annotated[
            bool,
            typer.Option(
                help="Apply store/cassandra.cql (keyspace and tables) and move a keyspace of an earlier "
                "storage layout to the current one (rows before = lines after, checked; resumable)."
            ),
        ] = True,
        wait: Annotated[
            float, typer.Option(min=0, help="Seconds to keep retrying while Kafka/Cassandra are unreachable.")
        ] = 0.0,
    ) -> None:
        """Create the topics and apply the CQL (idempotent), moving a keyspace of an earlier storage layout to
        the current one; the one-shot step of a deployment."""
        run_init(topics=topics, cql=cql, wait_s=wait)
