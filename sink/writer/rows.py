"""Which Cassandra rows a chat event becomes (pure; no driver, no Spark).

The columns of each table are read from the live schema (``schemas/cassandra.cql``), never listed
here: a column named like a :class:`~schemas.chat_event.ChatEvent` field takes that field, and the
derived columns (the id keys, ``bucket``, ``period``, the message id as a uuid, the stored line) have a
function in :data:`DERIVED`. A column
with neither is a schema change the sink does not understand yet, and is reported before any write. Static
columns (``chat_by_user.spilled``) are not part of a row: the caller leaves them out.

The index of login user keys (``user_login_keys``: channel key, month period, user key) takes the events whose
user rows are under a ``login:`` key; its ``period`` is the month even where the user row goes into a half
day. A user row's ``period`` is its month partition; past the cap of a user-month the writer puts it into its
half day instead (:attr:`TableRows.month_key`, :class:`sink.writer.caches.SpillGuard`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from consent.rule import whose
from schemas.chat_event import FIELD_NAMES, MAX_LOGIN_CHARS, ChatEvent
from schemas.cql import (
    LOGIN_KEY_PREFIX,
    bucket_of,
    channel_key,
    is_canonical_uuid,
    message_uuid,
    month_period,
    user_key,
)
from schemas.stored_line import strip

HOUR_MS = 3_600_000
"""The precision of the name history: a name is written at most once per hour of event time per process
(:class:`sink.writer.caches.NameCache`)."""
MAX_DISPLAY_NAME_CHARS = MAX_LOGIN_CHARS
"""A display name longer than this (never on Twitch: 25 characters) is stored as "" (unknown): it is a
clustering column of ``user_names``."""


def _event_user_key(event: ChatEvent) -> str | None:
    """Whose user rows the event is in (:func:`consent.rule.whose`: its sender, else the user a ban, a
    timeout or a deleted message targets); None for neither (a cleared chat, a NOTICE)."""
    return user_key(*whose(event))


def _stored_line(event: ChatEvent) -> str:
    """The line as ``chat_by_channel`` stores it (:func:`schemas.stored_line.strip`): an id tag is
    stripped only when the row's uuid gives it back (a canonical uuid is its own text)."""
    message_id = event.message_id
    stored_id = message_id if is_canonical_uuid(message_id) else message_uuid(message_id)
    return strip(event.raw, stored_id, event.sent_at)


def _has_user(event: ChatEvent) -> bool:
    return any(whose(event))


def _has_login_key(event: ChatEvent) -> bool:
    """Whether the event's user rows are under a ``login:`` key (no user id: a deleted message, a line
    without ids); decided without building :func:`consent.rule.whose` for a sender with an id."""
    if event.user_id:
        return False
    key = _event_user_key(event)
    return key is not None and key.startswith(LOGIN_KEY_PREFIX)


DERIVED: dict[str, Callable[[ChatEvent], Any]] = {
    "channel_key": lambda e: channel_key(e.channel_id, e.channel),
    "bucket": lambda e: bucket_of(e.sent_at),
    "message_id": lambda e: message_uuid(e.message_id),
    "line": _stored_line,
    "user_key": _event_user_key,
    "period": lambda e: month_period(e.sent_at),
}
"""Columns computed from the event rather than copied from a field of the same name (a derived column
takes precedence over a field of its name: ``message_id`` is stored as its uuid)."""


TABLES: dict[str, tuple[Callable[[ChatEvent], bool], bool]] = {
    "chat_by_channel": (lambda _e: True, False),
    "chat_buckets": (lambda _e: True, True),
    "user_login_keys": (_has_login_key, True),
    "chat_by_user": (_has_user, False),
}
"""Table -> (which events it takes, whether it is an index whose rows repeat across events)
(schemas/cassandra.cql, docs/storage.md)."""


class SchemaMismatch(ValueError):
    """The keyspace's tables do not match what the sink writes."""


def _check(table: str, column: str) -> None:
    if column not in DERIVED and column not in FIELD_NAMES:
        raise SchemaMismatch(
            f"table {table} has a column {column!r} that is neither a chat event field nor derived "
            "(sink/writer/rows.py DERIVED): update the sink, or use a keyspace created from "
            "schemas/cassandra.cql"
        )


@dataclass(frozen=True)
class TableRows:
    """How one table's row is taken from the values of an event's columns (:class:`EventRows`)."""

    table: str
    columns: tuple[str, ...]
    """The table's columns, in the order its insert binds them."""
    accepts: Callable[[ChatEvent], bool]
    is_index: bool
    pick: Callable[[Sequence[Any]], tuple[Any, ...]]
    """The table's values (in ``columns`` order) out of :meth:`EventRows.values` (or anything
    computed from them element-wise, such as the serialized cells)."""
    period_at: int | None = None
    """Where ``period`` is in the table's row (``chat_by_user``), else None."""
    month_key: Callable[[Sequence[Any]], tuple[Any, ...]] | None = None
    """The partition key (channel key, user key, period) of a row of the table, for ``chat_by_user``."""


class EventRows:
    """Every table's row of an event, from one pass over the union of the tables' columns.

    The two message tables share almost every column, so each value is read (and later serialized)
    once per event, not once per row.
    """

    def __init__(self, tables: Mapping[str, Sequence[str]]) -> None:
        """``tables``: table -> its live columns (any order); raises :class:`SchemaMismatch`."""
        for table, columns in tables.items():
            if table not in TABLES:
                raise SchemaMismatch(f"the sink does not write table {table}")
            for column in columns:
                _check(table, column)
        wanted = {c for columns in tables.values() for c in columns}
        fields = tuple(f for f in FIELD_NAMES if f in wanted and f not in DERIVED)
        derived = tuple(d for d in DERIVED if d in wanted)
        self.columns: tuple[str, ...] = fields + derived
        """Every column any table has: event fields first (read in one C call), then derived ones."""
        self._fields = operator.attrgetter(*fields) if len(fields) > 1 else None
        self._field_names = fields
        self._derive = tuple(DERIVED[d] for d in derived)
        index = {c: i for i, c in enumerate(self.columns)}
        self.tables: tuple[TableRows, ...] = tuple(
            self._table(name, tuple(c for c in self.columns if c in set(columns)), index)
            for name, columns in tables.items()
        )

    @staticmethod
    def _table(name: str, columns: tuple[str, ...], index: dict[str, int]) -> TableRows:
        positions = [index[c] for c in columns]
        pick: Callable[[Sequence[Any]], tuple[Any, ...]]
        if len(positions) == 1:
            only = positions[0]

            def pick(values: Sequence[Any]) -> tuple[Any, ...]:
                return (values[only],)

        else:
            pick = cast("Callable[[Sequence[Any]], tuple[Any, ...]]", operator.itemgetter(*positions))
        accepts, is_index = TABLES[name]
        if is_index or "period" not in columns:
            return TableRows(name, columns, accepts, is_index, pick)
        key = [columns.index(c) for c in ("channel_key", "user_key", "period")]
        month_key = cast("Callable[[Sequence[Any]], tuple[Any, ...]]", operator.itemgetter(*key))
        return TableRows(name, columns, accepts, is_index, pick, columns.index("period"), month_key)

    def values(self, event: ChatEvent) -> tuple[Any, ...]:
        """The event's value of every column in :attr:`columns`."""
        head: tuple[Any, ...] = (
            self._fields(event)
            if self._fields is not None
            else tuple(getattr(event, f) for f in self._field_names)
        )
        return head + tuple(d(event) for d in self._derive)

    def rows_of(self, event: ChatEvent) -> list[tuple[TableRows, tuple[Any, ...]]]:
        """Every (table, row values) the event becomes."""
        values = self.values(event)
        return [(t, t.pick(values)) for t in self.tables if t.accepts(event)]


NAME_TABLES: dict[str, tuple[str, ...]] = {
    "user_names": ("user_id", "user_login", "display_name"),
    "user_ids_by_login": ("user_login", "user_id"),
    "channel_names": ("channel_id", "channel"),
    "channel_ids_by_login": ("channel", "channel_id"),
}
"""The name-history tables -> their key columns, in the order they are bound. Each row has ``first_seen``
and ``last_seen`` besides, each written by its own statement (``schemas/cassandra.cql``)."""

NameWrite = tuple[str, tuple[str, ...]]
"""A name-history row to write: its table and key values (in :data:`NAME_TABLES` order)."""


def user_name(event: ChatEvent) -> tuple[str, str, str] | None:
    """(user id, login, display name or "") of an event that has both a ``user_id`` and a login; None
    otherwise (plain IRC, old imports, events without a sender): those are not in the name history."""
    user_id, login = event.user_id, event.user_login
    if not user_id or not login:
        return None
    display = event.display_name or ""
    return user_id, login, display if len(display) <= MAX_DISPLAY_NAME_CHARS else ""


def user_name_rows(name: tuple[str, str, str]) -> tuple[NameWrite, NameWrite]:
    user_id, login, _display = name
    return ("user_names", name), ("user_ids_by_login", (login, user_id))


def channel_name(event: ChatEvent) -> tuple[str, str] | None:
    """(channel id, channel login) of an event with a ``channel_id``; None otherwise."""
    channel_id = event.channel_id
    return (channel_id, event.channel) if channel_id else None


def channel_name_rows(name: tuple[str, str]) -> tuple[NameWrite, NameWrite]:
    channel_id, channel = name
    return ("channel_names", name), ("channel_ids_by_login", (channel, channel_id))
