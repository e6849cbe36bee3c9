"""A test double of the read store: :class:`MemoryStore`, the :class:`~store.protocol.LogStore` of a
list of chat events held in memory. Pure and in-process (no Cassandra), so the HTTP service, consent and
the readers are tested without storage; failures of the storage are injected by method name.

What it answers is derived from the events as Cassandra's store derives it from the rows: a channel is
its login or its id (the newest event's ``room-id``), a user the same; a user's lines are what they sent
and the bans, timeouts and deleted messages that name them (by ``target-user-id``, a CLEARCHAT's login,
a CLEARMSG's ``login`` tag); days and months are UTC. A random pick is the first PRIVMSG or USERNOTICE
(tests want one answer, not a random one).

:func:`memory_app` is an app factory over an empty :class:`MemoryStore`, as uvicorn's workers call one
(:mod:`serve.api.workers`), for tests of serving on several processes without Kafka or Cassandra.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any

from consent.rule import named_login, whose
from core.irc_parse import USER_KINDS
from core.logins import login_of
from core.times import utc_day
from schemas.chat_event import ChatEvent
from store.line import LogLine, Run
from store.names import NameSeen
from store.protocol import ById, Channel, Named

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["MemoryStore", "memory_app"]


class MemoryStore:
    """The logs of ``events`` (any order; kept in time order).

    ``channels``: channels listed beside those of the events (``(login, id)``); ``names``: the name history
    by user id; ``session``: what :attr:`session` gives (None: no Cassandra behind it). ``fail``: method
    name -> the exception that method raises when called (a stream: after ``lines_before_failure`` lines).
    :attr:`calls` records the name of every method called, in order."""

    def __init__(
        self,
        events: Iterable[ChatEvent] = (),
        *,
        channels: Iterable[tuple[str, str | None]] = (),
        names: Mapping[str, list[NameSeen]] | None = None,
        session: Any | None = None,
        fail: Mapping[str, BaseException] | None = None,
        lines_before_failure: int = 0,
    ) -> None:
        self.events = sorted(events, key=lambda e: (e.sent_at, e.message_id))
        self.extra_channels = list(channels)
        self.names = dict(names or {})
        self._session = session
        self.fail = dict(fail or {})
        self.lines_before_failure = lines_before_failure
        self.calls: list[str] = []

    @property
    def session(self) -> Any | None:
        return self._session

    def _call(self, name: str) -> None:
        self.calls.append(name)
        error = self.fail.get(name)
        if error is not None:
            raise error

    # --- who is named -------------------------------------------------------------------------------------

    def _channel_events(self, channel: Named) -> list[ChatEvent]:
        if isinstance(channel, ById):
            return [e for e in self.events if e.channel_id == channel.id.strip()]
        login = login_of(channel)
        the_id = self._newest_id(login, channel=True)
        return [e for e in self.events if e.channel == login or (the_id and e.channel_id == the_id)]

    def _newest_id(self, login: str, *, channel: bool) -> str | None:
        for e in reversed(self.events):
            if channel and e.channel == login and e.channel_id:
                return e.channel_id
            if not channel and e.user_login == login and e.user_id:
                return e.user_id
        return None

    def _concerns(self, event: ChatEvent, user: Named) -> bool:
        """Whether ``event`` is one of ``user``'s lines: sent by them, or a ban, timeout or deletion of
        theirs."""
        if isinstance(user, ById):
            the_id: str | None = user.id.strip()
            login = None
        else:
            login = login_of(user)
            the_id = self._newest_id(login, channel=False)
        user_id = whose(event)[0]  # the sink keys a user's rows by it (consent.rule)
        if user_id is not None and (the_id is not None or user_id != event.user_id):
            return user_id == the_id  # a ban's target id is compared even when the user's id is unknown
        return login is not None and named_login(event) == login

    def _user_events(self, channel: Named, user: Named) -> list[ChatEvent]:
        return [e for e in self._channel_events(channel) if self._concerns(e, user)]

    async def channel_id(self, channel: Named) -> str | None:
        self._call("channel_id")
        return (
            channel.id.strip()
            if isinstance(channel, ById)
            else self._newest_id(login_of(channel), channel=True)
        )

    async def user_id(self, user: Named) -> str | None:
        self._call("user_id")
        return user.id.strip() if isinstance(user, ById) else self._newest_id(login_of(user), channel=False)

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        self._call("user_name_history")
        return list(self.names.get(user_id.strip(), []))

    async def channel_by_id(self, channel_id: str) -> str | None:
        self._call("channel_by_id")
        the_id = channel_id.strip()
        for e in reversed(self.events):
            if e.channel_id == the_id:
                return e.channel
        return next((login for login, i in self.extra_channels if i == the_id), None)

    async def user_by_id(self, channel: Named, user_id: str) -> str | None:
        self._call("user_by_id")
        the_id = user_id.strip()
        return next(
            (e.user_login for e in reversed(self.events) if e.user_id == the_id and e.user_login), None
        )

    # --- channels, days and months ------------------------------------------------------------------------

    async def channels(self) -> list[Channel]:
        self._call("channels")
        found: dict[str, str | None] = {}
        for e in self.events:
            found[e.channel] = e.channel_id or found.get(e.channel)
        for login, the_id in self.extra_channels:
            found.setdefault(login, the_id)
        return [Channel(login, found[login]) for login in sorted(found)]

    async def channel_days(self, channel: Named) -> list[date]:
        self._call("channel_days")
        return sorted({utc_day(e.sent_at) for e in self._channel_events(channel)}, reverse=True)

    async def latest_day(self, channel: Named) -> date | None:
        self._call("latest_day")
        events = self._channel_events(channel)
        return utc_day(events[-1].sent_at) if events else None

    async def user_months(self, channel: Named, user: Named) -> list[tuple[int, int]]:
        self._call("user_months")
        days = {utc_day(e.sent_at) for e in self._user_events(channel, user)}
        return sorted({(d.year, d.month) for d in days}, reverse=True)

    async def latest_user_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        self._call("latest_user_month")
        events = self._user_events(channel, user)
        if not events:
            return None
        day = utc_day(events[-1].sent_at)
        return day.year, day.month

    # --- events -------------------------------------------------------------------------------------------

    async def _runs(self, name: str, events: list[ChatEvent], reverse: bool) -> AsyncIterator[Run]:
        """The events as runs of one line each (a failure in ``fail`` after ``lines_before_failure``)."""
        error = self.fail.get(name)
        for n, event in enumerate(reversed(events) if reverse else events):
            if error is not None and n >= self.lines_before_failure:
                raise error
            yield [LogLine.of(event)]
        if error is not None:
            raise error

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        self.calls.append("channel_runs")
        events = [e for e in self._channel_events(channel) if lo <= e.sent_at < hi]
        return self._runs("channel_runs", events, reverse)

    def user_runs(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[Run]:
        self.calls.append("user_runs")
        events = [e for e in self._user_events(channel, user) if lo <= e.sent_at < hi]
        return self._runs("user_runs", events, reverse)

    async def random_channel_event(self, channel: Named) -> ChatEvent | None:
        self._call("random_channel_event")
        return next((e for e in self._channel_events(channel) if e.kind in USER_KINDS), None)

    async def random_user_event(self, channel: Named, user: Named) -> ChatEvent | None:
        self._call("random_user_event")
        return next((e for e in self._user_events(channel, user) if e.kind in USER_KINDS), None)

    async def user_count(self, channel: Named, user: Named, lo: int, hi: int) -> tuple[int, str | None]:
        self._call("user_count")
        count = sum(1 for e in self._user_events(channel, user) if lo <= e.sent_at < hi)
        return count, await self.user_id(user)

    async def senders(self, channel: Named, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        self._call("senders")
        for e in self._channel_events(channel):
            if lo <= e.sent_at < hi:
                yield e.user_login, e.user_id

    async def ping(self) -> None:
        self._call("ping")


def memory_app() -> FastAPI:
    """The service's app over an empty :class:`MemoryStore`, its settings from the environment, opt-outs
    and fresh reads off (no Kafka)."""
    from consent.settings import ConsentSettings
    from core.settings import load
    from serve.api.app import create_app
    from serve.settings import FreshSettings, ServeSettings

    return create_app(
        load(ServeSettings),
        MemoryStore(),
        consent=ConsentSettings(serve_consent=False),
        fresh=load(FreshSettings, serve_fresh=False),
    )
