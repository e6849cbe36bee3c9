"""What the HTTP layer and ``chatlog logs`` ask of the stored logs: the read store's interface.

:class:`LogStore` is implemented over the id-keyed tables (docs/storage.md) by
:mod:`store.read`, wrapped by :class:`serve.consent.ConsentStore` (opt-outs enforced),
and in memory for tests by :mod:`serve.testing`. Every store implements every method: nothing is probed.
A channel or a user is named by its login (a ``str``: the id that login had last, every login of that id
and the login itself are read, so a renamed channel or user keeps one history) or by its Twitch id
(:class:`ById`: the ``/channelid/`` and ``/userid/`` routes, ``--channel-id`` / ``--user-id``). Times are
epoch milliseconds, ranges half-open (``lo <= sent_at < hi``); a range's events come back as
:class:`~store.line.LogLine` (the stored line, restored and parsed into its
:class:`~schemas.chat_event.ChatEvent` only when asked: a text or raw answer needs no parse), in time
order (``reverse``: newest first), handed on in runs (:data:`~store.line.Run`: a stretch of one block
as a :class:`~store.line.Span`, else a list; :func:`~store.line.each_line` gives them one by one); a
single event picked at random as its ``ChatEvent``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from schemas.chat_event import ChatEvent
from store.line import Run
from store.names import NameSeen


@dataclass(frozen=True, slots=True)
class Channel:
    """A logged channel: its login and its Twitch id (None when no stored event carries one)."""

    login: str
    channel_id: str | None


@dataclass(frozen=True, slots=True)
class ById:
    """A channel or user named by its Twitch id; ``name`` is what messages call it (its newest login, else
    the id), which is also what ``str()`` and f-strings give."""

    id: str
    name: str

    def __str__(self) -> str:
        return self.name


Named = str | ById
"""A channel or user: its login (``str``) or its Twitch id (:class:`ById`)."""


class LogStore(Protocol):
    """The read side of the logs, as the HTTP service and ``chatlog logs`` use it."""

    @property
    def session(self) -> Any | None:
        """The Cassandra session behind the store, for what is read and written beside the logs (the
        coverage ledger of the web page's gaps, the consent audit, erasure); None: there is none (those
        routes answer without it)."""
        ...

    async def channels(self) -> list[Channel]:
        """Every channel with something stored, by login."""
        ...

    async def channel_by_id(self, channel_id: str) -> str | None:
        """The login of the channel with this Twitch id (None: not logged)."""
        ...

    async def channel_id(self, channel: Named) -> str | None:
        """The Twitch id ``channel`` is read under: a :class:`ById`'s, else the id its login had last (None:
        none is known)."""
        ...

    async def user_id(self, user: Named) -> str | None:
        """The Twitch id ``user`` is read under: a :class:`ById`'s, else the id its login had last (None:
        none is known)."""
        ...

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        """Every (login, display name) the user ``user_id`` had, oldest first (empty: unknown)."""
        ...

    async def user_by_id(self, channel: Named, user_id: str) -> str | None:
        """The newest login of the user with this Twitch id (None: unknown)."""
        ...

    async def channel_days(self, channel: Named) -> list[date]:
        """The UTC days with something stored in ``channel``, newest first."""
        ...

    async def latest_day(self, channel: Named) -> date | None:
        """The newest UTC day with something stored in ``channel`` (None: nothing)."""
        ...

    async def user_months(self, channel: Named, user: Named) -> list[tuple[int, int]]:
        """The (year, month) pairs, UTC, in which ``user`` has events in ``channel``, newest first."""
        ...

    async def latest_user_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        """The newest (year, month), UTC, in which ``user`` has events in ``channel`` (None: none)."""
        ...

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        """Every event of ``channel`` with ``lo <= sent_at < hi``, run by run."""
        ...

    def user_runs(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[Run]:
        """Every event of ``user`` in ``channel`` with ``lo <= sent_at < hi``, run by run: what the user
        sent, and the bans, timeouts and deleted messages that name the user."""
        ...

    async def random_channel_event(self, channel: Named) -> ChatEvent | None:
        """One event of ``channel`` picked at random (None: nothing stored)."""
        ...

    async def random_user_event(self, channel: Named, user: Named) -> ChatEvent | None:
        """One event of ``user`` in ``channel`` picked at random (None: nothing stored)."""
        ...

    async def user_count(self, channel: Named, user: Named, lo: int, hi: int) -> tuple[int, str | None]:
        """How many events ``user`` has in ``channel`` with ``lo <= sent_at < hi``, and the user's Twitch
        id (None: none known), counted by the storage."""
        ...

    def senders(self, channel: Named, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        """The ``(user_login, user_id)`` of every event of ``channel`` with ``lo <= sent_at < hi`` (None
        for an event without one), in no particular order: what counting by sender needs."""
        ...

    async def ping(self) -> None:
        """Raise when the storage does not answer."""
        ...
