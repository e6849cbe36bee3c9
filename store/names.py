"""The name history: which logins (and display names) a Twitch user or channel id had, and which ids a
login belonged to. The one reader of the four name tables, for ``GET /namehistory/{user_id}`` (through
:meth:`store.read.LogReader.user_name_history`) and ``chatlog names``.

The sink keeps four small tables (``store/cassandra.cql``, written by :mod:`store.write`):
``user_names`` (user id -> logins and display names), ``user_ids_by_login`` (login -> user ids),
``channel_names`` (channel id -> logins) and ``channel_ids_by_login`` (login -> channel ids), each row
with the first and last time it was seen. Every lookup here is one partition read, awaited without a
thread per request (:mod:`store.aiocql`), its statement prepared once per session. ``first_seen``
and ``last_seen`` are times of real events, each in the same UTC hour as the first (last) event of that
name: the sink writes a name at most once per hour of event time per process. ``first_seen`` is None when
that cell has expired (a keyspace with a TTL: the first sighting is older than the retention).

``keyspace``: the tables' keyspace when the session has none set (None: the session's).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from core.logins import login_of
from core.times import epoch_ms
from store.aiocql import PagedQuery

USER_NAMES_CQL: Final = (
    "SELECT user_login, display_name, first_seen, last_seen FROM {ks}user_names WHERE user_id = ?"
)
USER_IDS_CQL: Final = "SELECT user_id, first_seen, last_seen FROM {ks}user_ids_by_login WHERE user_login = ?"
CHANNEL_NAMES_CQL: Final = "SELECT channel, first_seen, last_seen FROM {ks}channel_names WHERE channel_id = ?"
CHANNEL_IDS_CQL: Final = (
    "SELECT channel_id, first_seen, last_seen FROM {ks}channel_ids_by_login WHERE channel = ?"
)

_prepared: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class NameSeen:
    """A login (with a display name, for users) of one id, and when it was seen."""

    login: str
    display_name: str | None
    first_seen_ms: int | None
    last_seen_ms: int | None


@dataclass(frozen=True)
class IdSeen:
    """An id a login belonged to, and when."""

    id: str
    first_seen_ms: int | None
    last_seen_ms: int | None


def _ms(value: datetime | None) -> int | None:
    """Epoch ms of a driver timestamp (a naive UTC datetime)."""
    return None if value is None else epoch_ms(value)


def _order(first: int | None, last: int | None, name: str) -> tuple[int, int, str]:
    return (first if first is not None else -1, last if last is not None else -1, name)


async def _rows(session: Any, cql: str, keyspace: str | None, key: str) -> list[Any]:
    if not key:  # Cassandra rejects an empty partition key; nothing is stored under one
        return []
    text = cql.format(ks=f"{keyspace}." if keyspace else "")
    statements = _prepared.setdefault(session, {})
    statement = statements.get(text)
    if statement is None:  # a blocking round trip, once per session and statement
        statement = statements[text] = await asyncio.to_thread(session.prepare, text)
    return await PagedQuery(session, statement, (key,)).all()


def _names(rows: list[Any], login: str) -> list[NameSeen]:
    found = [
        NameSeen(
            getattr(r, login), getattr(r, "display_name", None) or None, _ms(r.first_seen), _ms(r.last_seen)
        )
        for r in rows
    ]
    return sorted(found, key=lambda n: _order(n.first_seen_ms, n.last_seen_ms, n.login))


def _ids(rows: list[Any], column: str) -> list[IdSeen]:
    found = [IdSeen(getattr(r, column), _ms(r.first_seen), _ms(r.last_seen)) for r in rows]
    return sorted(found, key=lambda i: _order(i.first_seen_ms, i.last_seen_ms, i.id))


async def user_names(session: Any, user_id: str, keyspace: str | None = None) -> list[NameSeen]:
    """Every (login, display name) of ``user_id``, oldest first; empty when the id is unknown."""
    return _names(await _rows(session, USER_NAMES_CQL, keyspace, user_id), "user_login")


async def user_ids(session: Any, login: str, keyspace: str | None = None) -> list[IdSeen]:
    """Every user id that used ``login``, oldest first (a login freed by a rename can be taken again)."""
    return _ids(await _rows(session, USER_IDS_CQL, keyspace, login_of(login)), "user_id")


async def channel_names(session: Any, channel_id: str, keyspace: str | None = None) -> list[NameSeen]:
    """Every login of the channel ``channel_id``, oldest first; empty when the id is unknown."""
    return _names(await _rows(session, CHANNEL_NAMES_CQL, keyspace, channel_id), "channel")


async def channel_ids(session: Any, login: str, keyspace: str | None = None) -> list[IdSeen]:
    """Every channel id that used the login ``login`` (with or without ``#``), oldest first."""
    return _ids(await _rows(session, CHANNEL_IDS_CQL, keyspace, login_of(login)), "channel_id")
