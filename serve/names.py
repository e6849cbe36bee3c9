"""Reading the name history: which logins (and display names) a Twitch user id or channel id had, and
which ids a login belonged to (``chatlog names``).

The sink keeps four small tables (``schemas/cassandra.cql``, written by :mod:`sink.executor.partition`):
``user_names`` (user id -> logins and display names), ``user_ids_by_login`` (login -> user ids),
``channel_names`` (channel id -> logins) and ``channel_ids_by_login`` (login -> channel ids), each row
with the first and last time it was seen. Every lookup here is one partition read. ``first_seen`` and
``last_seen`` are times of real events, each in the same UTC hour as the first (last) event of that name:
the sink writes a name at most once per hour of event time per process. ``first_seen`` is None when
that cell has expired (a keyspace with a TTL: the first sighting is older than the retention).

The functions are synchronous, over a connected cassandra-driver session (as :mod:`serve.coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

USER_NAMES_CQL: Final = (
    "SELECT user_login, display_name, first_seen, last_seen FROM {ks}.user_names WHERE user_id = ?"
)
USER_IDS_CQL: Final = "SELECT user_id, first_seen, last_seen FROM {ks}.user_ids_by_login WHERE user_login = ?"
CHANNEL_NAMES_CQL: Final = (
    "SELECT channel, first_seen, last_seen FROM {ks}.channel_names WHERE channel_id = ?"
)
CHANNEL_IDS_CQL: Final = (
    "SELECT channel_id, first_seen, last_seen FROM {ks}.channel_ids_by_login WHERE channel = ?"
)


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


@dataclass(frozen=True)
class Identity:
    """One id and its whole name history (what ``chatlog names`` prints for each id it finds)."""

    id: str
    names: list[NameSeen]


def _ms(value: datetime | None) -> int | None:
    """Epoch ms of a driver timestamp (a naive UTC datetime)."""
    return None if value is None else int(value.replace(tzinfo=UTC).timestamp() * 1000)


def _order(first: int | None, last: int | None, name: str) -> tuple[int, int, str]:
    return (first if first is not None else -1, last if last is not None else -1, name)


def login_of(text: str) -> str:
    """A login as stored: lower case, without a channel's ``#``."""
    return text.strip().lstrip("#").lower()


def _rows(session: Any, cql: str, keyspace: str, key: str) -> list[Any]:
    if not key:  # Cassandra rejects an empty partition key; nothing is stored under one
        return []
    return list(session.execute(session.prepare(cql.format(ks=keyspace)), (key,)))


def name_history(session: Any, keyspace: str, user_id: str) -> list[NameSeen]:
    """Every (login, display name) of ``user_id``, oldest first; empty when the id is unknown."""
    found = [
        NameSeen(r.user_login, r.display_name or None, _ms(r.first_seen), _ms(r.last_seen))
        for r in _rows(session, USER_NAMES_CQL, keyspace, user_id)
    ]
    return sorted(found, key=lambda n: _order(n.first_seen_ms, n.last_seen_ms, n.login))


def user_ids_for_login(session: Any, keyspace: str, login: str) -> list[IdSeen]:
    """Every user id that used ``login``, oldest first (a login freed by a rename can be taken again)."""
    found = [
        IdSeen(r.user_id, _ms(r.first_seen), _ms(r.last_seen))
        for r in _rows(session, USER_IDS_CQL, keyspace, login_of(login))
    ]
    return sorted(found, key=lambda i: _order(i.first_seen_ms, i.last_seen_ms, i.id))


def channel_name_history(session: Any, keyspace: str, channel_id: str) -> list[NameSeen]:
    """Every login of the channel ``channel_id``, oldest first; empty when the id is unknown."""
    found = [
        NameSeen(r.channel, None, _ms(r.first_seen), _ms(r.last_seen))
        for r in _rows(session, CHANNEL_NAMES_CQL, keyspace, channel_id)
    ]
    return sorted(found, key=lambda n: _order(n.first_seen_ms, n.last_seen_ms, n.login))


def channel_ids_for_login(session: Any, keyspace: str, login: str) -> list[IdSeen]:
    """Every channel id that used the login ``login`` (with or without ``#``), oldest first."""
    found = [
        IdSeen(r.channel_id, _ms(r.first_seen), _ms(r.last_seen))
        for r in _rows(session, CHANNEL_IDS_CQL, keyspace, login_of(login))
    ]
    return sorted(found, key=lambda i: _order(i.first_seen_ms, i.last_seen_ms, i.id))


def identities(session: Any, keyspace: str, query: str, *, channel: bool = False) -> list[Identity]:
    """The ids ``query`` names and the history of each: ``query`` as an id (when it is all digits) and
    every id that used it as a login. Twitch logins may be all digits too, so a number is looked up
    both ways; an id with no history is left out. Empty: nothing is known by that id or login."""
    history = channel_name_history if channel else name_history
    ids_for = channel_ids_for_login if channel else user_ids_for_login
    candidates: list[str] = []
    text = query.strip()
    if text.isascii() and text.isdigit():
        candidates.append(text)
    candidates += [seen.id for seen in ids_for(session, keyspace, text)]
    out: list[Identity] = []
    for id_ in dict.fromkeys(candidates):
        names = history(session, keyspace, id_)
        if names:
            out.append(Identity(id_, names))
    return out
