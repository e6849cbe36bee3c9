"""Throw-away Kafka topics and Cassandra keyspaces for one benchmark run, removed when the run ends
(whether it succeeded or not).

A scratch prefix is the run's own (a random or time-stamped part), so deleting "every topic that starts
with the prefix" only ever reaches what this run made.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from core.kafka_admin import admin_client, ensure_topics
from core.settings import CassandraSettings, KafkaSettings

log = logging.getLogger(__name__)

K = TypeVar("K", bound=KafkaSettings)
_TIMEOUT_S = 60.0
_KEYSPACE = re.compile(r"[a-z][a-z0-9_]{0,47}")


@contextmanager
def scratch_topics(
    settings: K, prefix: str, *, also: Sequence[str] = (), groups: Sequence[str] = (), **update: Any
) -> Iterator[K]:
    """``settings`` with its topics named ``<prefix>.<role>`` (and any other ``update``), created now.
    On the way out every topic whose name starts with ``<prefix>.`` or one of ``also`` (topics the run
    made besides its own: a raw producer's, faust's changelogs) is deleted, and the consumer ``groups``."""
    scratch = settings.with_topics(prefix, **update)
    try:
        ensure_topics(scratch)
        yield scratch
    finally:
        delete_topics(scratch, (f"{prefix}.", *also))
        delete_groups(scratch, groups)


def delete_topics(settings: KafkaSettings, prefixes: Sequence[str]) -> list[str]:
    """Delete every topic whose name starts with one of ``prefixes``; returns their names."""
    admin = admin_client(settings)
    names = [t for t in admin.list_topics(timeout=_TIMEOUT_S).topics if t.startswith(tuple(prefixes))]
    if names:
        for name, future in admin.delete_topics(names, operation_timeout=30).items():
            try:
                future.result(timeout=_TIMEOUT_S)
            except Exception as exc:  # cleanup goes on: one left-over topic is not worth a failed run
                log.warning("scratch topic %s not deleted: %s", name, exc)
    return names


def delete_groups(settings: KafkaSettings, groups: Sequence[str], wait_s: float = 60.0) -> None:
    """Delete the consumer ``groups`` (those that never existed are no error). A group whose members
    just stopped stays "not empty" until the broker lets them go: that is retried for up to ``wait_s``."""
    admin = admin_client(settings)
    pending = list(groups)
    deadline = time.monotonic() + wait_s
    while pending:
        busy = []
        for name, future in admin.delete_consumer_groups(pending, request_timeout=30).items():
            try:
                future.result(timeout=_TIMEOUT_S)
            except KafkaException as exc:
                code = exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None
                if code == KafkaError.NON_EMPTY_GROUP and time.monotonic() < deadline:
                    busy.append(name)
                elif code != KafkaError.GROUP_ID_NOT_FOUND:
                    log.warning("scratch consumer group %s not deleted: %s", name, exc)
        pending = busy
        if pending:
            time.sleep(1.0)


@contextmanager
def scratch_keyspaces(settings: CassandraSettings, *names: str) -> Iterator[tuple[str, ...]]:
    """Keyspaces ``names`` (made by the code under test, e.g. the sink's schema set-up) are dropped on
    the way out, if they exist. Yields ``names``."""
    _check_keyspace_names(names)
    try:
        yield names
    finally:
        drop_keyspaces(settings, names)


def drop_keyspaces(settings: CassandraSettings, names: Sequence[str]) -> None:
    """``DROP KEYSPACE IF EXISTS`` each of ``names`` (plain CQL names only: they go into the statement)."""
    from core.cql import connect

    _check_keyspace_names(names)
    if not names:
        return
    cluster, session = connect(settings, timeout=60)
    try:
        for name in names:
            session.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=120)
    finally:
        cluster.shutdown()


def _check_keyspace_names(names: Sequence[str]) -> None:
    bad = [n for n in names if not _KEYSPACE.fullmatch(n)]
    if bad:
        raise ValueError(f"not a keyspace name: {bad}")
