"""The name history read from asyncio: a user id's logins (``user_names``), awaited without a thread per
request (:mod:`serve.aiocql`), for ``GET /namehistory/{user_id}``.

:mod:`serve.names` reads the same table synchronously for ``chatlog names``; this reads it over the
session the HTTP service already holds (``CassandraStore.session``, its keyspace set), with the statement
prepared once per session. Rows are :class:`serve.names.NameSeen`, one per (login, display name).
"""

from __future__ import annotations

import asyncio
import weakref
from datetime import UTC, datetime
from typing import Any, Final

from serve.aiocql import PagedQuery
from serve.names import NameSeen

USER_NAMES_CQL: Final = (
    "SELECT user_login, display_name, first_seen, last_seen FROM user_names WHERE user_id = ?"
)

_prepared: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _ms(value: datetime | None) -> int | None:
    """Epoch ms of a driver timestamp (a naive UTC datetime)."""
    return None if value is None else int(value.replace(tzinfo=UTC).timestamp() * 1000)


async def _statement(session: Any) -> Any:
    statement = _prepared.get(session)
    if statement is None:  # a blocking round trip, once per session
        statement = await asyncio.to_thread(session.prepare, USER_NAMES_CQL)
        _prepared[session] = statement
    return statement


async def user_names(session: Any, user_id: str) -> list[NameSeen]:
    """Every (login, display name) row of ``user_id``, in the table's order; empty when it is unknown."""
    if not user_id:  # Cassandra rejects an empty partition key; nothing is stored under one
        return []
    rows = await PagedQuery(session, await _statement(session), (user_id,)).all()
    return [NameSeen(r.user_login, r.display_name or None, _ms(r.first_seen), _ms(r.last_seen)) for r in rows]
