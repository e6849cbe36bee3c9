"""What the HTTP layer asks of the stored logs: a small async reader interface.

:class:`LogStore` is implemented over today's login-keyed tables by :mod:`serve.cassandra_store`; the
id-keyed tables of the next schema will implement it too, and the routes (:mod:`serve.api`) stay as they
are. Times are epoch milliseconds, ranges half-open (``lo <= sent_at < hi``); events come back as
:class:`~schemas.chat_event.ChatEvent`, in time order (``reverse``: newest first).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from schemas.chat_event import ChatEvent


@dataclass(frozen=True, slots=True)
class Channel:
    """A logged channel: its login and its Twitch id (None when no stored event carries one)."""

    login: str
    channel_id: str | None


class LookupUnsupported(Exception):
    """The store cannot answer this kind of lookup (e.g. by user id before the id-keyed tables)."""


class LogStore(Protocol):
    """The read side of the logs, as the HTTP service uses it."""

    async def channels(self) -> list[Channel]:
        """Every channel with something stored, by login."""
        ...

    async def channel_by_id(self, channel_id: str) -> str | None:
        """The login of the channel with this Twitch id (None: not logged)."""
        ...

    async def user_by_id(self, channel: str, user_id: str) -> str | None:
        """The login of the user with this Twitch id in ``channel`` (None: nothing stored); may raise
        :class:`LookupUnsupported`."""
        ...

    async def channel_days(self, channel: str) -> list[date]:
        """The UTC days with something stored in ``channel``, newest first."""
        ...

    async def latest_day(self, channel: str) -> date | None:
        """The newest UTC day with something stored in ``channel`` (None: nothing)."""
        ...

    async def user_months(self, channel: str, user: str) -> list[tuple[int, int]]:
        """The (year, month) pairs, UTC, in which ``user`` has events in ``channel``, newest first."""
        ...

    async def latest_user_month(self, channel: str, user: str) -> tuple[int, int] | None:
        """The newest (year, month), UTC, in which ``user`` has events in ``channel`` (None: none)."""
        ...

    def channel_events(
        self, channel: str, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[ChatEvent]:
        """Every event of ``channel`` with ``lo <= sent_at < hi``."""
        ...

    def user_events(
        self, channel: str, user: str, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[ChatEvent]:
        """Every event of ``user`` (a login) in ``channel`` with ``lo <= sent_at < hi``."""
        ...

    async def random_channel_event(self, channel: str) -> ChatEvent | None:
        """One event of ``channel`` picked at random (None: nothing stored)."""
        ...

    async def random_user_event(self, channel: str, user: str) -> ChatEvent | None:
        """One event of ``user`` (a login) in ``channel`` picked at random (None: nothing stored)."""
        ...

    async def user_count(self, channel: str, user: str, lo: int, hi: int) -> tuple[int, str | None]:
        """How many events ``user`` (a login) has in ``channel`` with ``lo <= sent_at < hi``, and the
        user's Twitch id (None: none stored), counted by the storage."""
        ...

    def senders(self, channel: str, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        """The ``(user_login, user_id)`` of every event of ``channel`` with ``lo <= sent_at < hi`` (None
        for an event without one), in no particular order: what counting by sender needs."""
        ...

    async def ping(self) -> None:
        """Raise when the storage does not answer."""
        ...
