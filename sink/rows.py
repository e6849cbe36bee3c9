"""Which Cassandra rows a chat event becomes (pure; no driver, no Spark).

The columns of each table are read from the live schema (``schemas/cassandra.cql``), never listed
here: a column named like a :class:`~schemas.chat_event.ChatEvent` field takes that field, and the few
derived columns (``bucket``, the moderation targets) have a function in :data:`DERIVED`. A column
with neither is a schema change the sink does not understand yet, and is reported before any write.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.chat_event import FIELD_NAMES, ChatEvent
from schemas.cql import bucket_of

MODERATION_KINDS = frozenset({"CLEARCHAT", "CLEARMSG"})


def _ban_duration(event: ChatEvent) -> int | None:
    value = event.tags.get("ban-duration") if event.kind == "CLEARCHAT" else None
    return int(value) if value is not None and value.isdigit() and len(value) < 10 else None


def _target_user_login(event: ChatEvent) -> str | None:
    if event.kind == "CLEARMSG":
        return event.tags.get("login")
    if event.kind == "CLEARCHAT":
        return event.text or None
    return None


DERIVED: dict[str, Callable[[ChatEvent], Any]] = {
    "bucket": lambda e: bucket_of(e.sent_at),
    "target_user_login": _target_user_login,
    "target_user_id": lambda e: e.tags.get("target-user-id"),
    "target_message_id": lambda e: e.tags.get("target-msg-id") if e.kind == "CLEARMSG" else None,
    "ban_duration_s": _ban_duration,
}
"""Columns computed from the event rather than copied from a field of the same name."""


def _has_user(event: ChatEvent) -> bool:
    return bool(event.user_login)


TABLES: dict[str, tuple[Callable[[ChatEvent], bool], bool]] = {
    "messages_by_channel": (lambda _e: True, False),
    "channel_buckets": (lambda _e: True, True),
    "messages_by_user": (_has_user, False),
    "user_buckets": (_has_user, True),
    "moderation_by_channel": (lambda e: e.kind in MODERATION_KINDS, False),
}
"""Table -> (which events it takes, whether it is an index whose rows repeat across events)."""


class SchemaMismatch(ValueError):
    """The keyspace's tables do not match what the sink writes."""


def _getter(table: str, column: str) -> Callable[[ChatEvent], Any]:
    if column in DERIVED:
        return DERIVED[column]
    if column in FIELD_NAMES:
        return lambda e: getattr(e, column)
    raise SchemaMismatch(
        f"table {table} has a column {column!r} that is neither a chat event field nor derived "
        "(sink/rows.py DERIVED): update the sink, or use a keyspace created from schemas/cassandra.cql"
    )


@dataclass(frozen=True)
class TableRows:
    """How one table's row is built from an event."""

    table: str
    columns: tuple[str, ...]
    accepts: Callable[[ChatEvent], bool]
    is_index: bool
    build: Callable[[ChatEvent], tuple[Any, ...]]


def table_rows(table: str, columns: Sequence[str]) -> TableRows:
    """The row builder of ``table`` with these columns; its ``columns`` is the order to insert them in
    (event fields first, then derived columns: the fields are read in one C call)."""
    if table not in TABLES:
        raise SchemaMismatch(f"the sink does not write table {table}")
    for column in columns:
        _getter(table, column)
    fields = tuple(c for c in columns if c in FIELD_NAMES and c not in DERIVED)
    derived = tuple(c for c in columns if c in DERIVED)
    get_fields = operator.attrgetter(*fields) if len(fields) > 1 else None
    derive = tuple(DERIVED[c] for c in derived)
    accepts, is_index = TABLES[table]

    def build(event: ChatEvent) -> tuple[Any, ...]:
        head: tuple[Any, ...] = (
            get_fields(event) if get_fields is not None else tuple(getattr(event, f) for f in fields)
        )
        return head + tuple(d(event) for d in derive)

    return TableRows(table, fields + derived, accepts, is_index, build)


def rows_of(event: ChatEvent, tables: Sequence[TableRows]) -> list[tuple[TableRows, tuple[Any, ...]]]:
    """Every (table, row values) the event becomes."""
    return [(t, t.build(event)) for t in tables if t.accepts(event)]
