"""The channel and user a log route names (``/{ct}/{c}``, ``/{ut}/{u}``), resolved through the app's store,
for every route that takes them (the log routes, ``/random``, ``/search``, ``/stats``); a :class:`Subject` is
either, for the routes written once for a channel and a user in it.

``{ct}`` is ``channel`` (a login) or ``channelid`` (a Twitch id, named by its newest login); ``{ut}``
``user`` or ``userid``. A channel that is not logged, an unknown user id, or a name longer than any login
is a 404 (the name is never looked up, or echoed whole).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from fastapi import Request

from core.logins import login_of
from serve.errors import not_found
from store.protocol import ById, LogStore, Named

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent
    from store.line import Run

CHANNEL_KINDS: Final = ("channel", "channelid")
USER_KINDS: Final = ("user", "userid")
MAX_NAME_CHARS: Final = 64
"""Longer than any login (Twitch: 25 characters; IRC servers: ~30)."""


def store_of(request: Request) -> LogStore:
    """The app's read store."""
    store: LogStore = request.app.state.store
    return store


async def resolve_channel(request: Request, kind: str, value: str) -> Named:
    """The channel of ``/{kind}/{value}``: its login, or its id (named by its newest login); 404 when it
    is not logged."""
    store = store_of(request)
    if kind not in CHANNEL_KINDS:
        raise not_found("no such route (expected /channel/<login> or /channelid/<id>)")
    if len(value) > MAX_NAME_CHARS:  # no such channel; never looked up (or cached) or echoed whole
        raise not_found(f"no logged channel is named that: longer than {MAX_NAME_CHARS} characters")
    if kind == "channelid":
        found = await store.channel_by_id(value.strip())
        if found is None:
            raise not_found(f"no logged channel has the id {value[:40]!r}")
        return ById(value.strip(), found)
    name = login_of(value)
    if not name or await store.latest_day(name) is None:
        raise not_found(f"channel {name[:200]!r} is not logged")
    return name


async def resolve_user(request: Request, channel: Named, kind: str, value: str) -> Named:
    """The user of ``/{kind}/{value}``: a login, or an id (named by its newest login); 404 when an id is
    unknown."""
    if kind not in USER_KINDS:
        raise not_found("no such route (expected /user/<login> or /userid/<id>)")
    if len(value) > MAX_NAME_CHARS:  # never looked up, or echoed whole in the 404s that name the user
        raise not_found(f"no user is named that: longer than {MAX_NAME_CHARS} characters")
    if kind == "userid":
        found = await store_of(request).user_by_id(channel, value.strip())
        if found is None:
            raise not_found(f"no user with the id {value[:40]!r} in #{channel}")
        return ById(value.strip(), found)
    name = login_of(value)
    if not name:
        raise not_found("empty user name")
    return name


def user_by_id_unnamed(kind: str, value: str) -> ById | None:
    """The user of ``/userid/{value}`` named by its id, its login not looked up (None for ``/user/`` or a
    name longer than any login): for a read whose answer does not show the name, which looks the id up
    (:func:`resolve_user`) only when it finds nothing, to say which 404 it is. A user with rows under its
    id exists; one query less per read (a user's month by id: the most asked read)."""
    if kind != "userid" or len(value) > MAX_NAME_CHARS:
        return None
    return ById(value.strip(), value.strip())


def segment(named: Named) -> str:
    """How a resolved channel or user is named in a redirect: its id for ``/channelid``, ``/userid``."""
    return named.id if isinstance(named, ById) else named


@dataclass(frozen=True, slots=True)
class Subject:
    """Whose logs a route reads: a channel's (``user`` None), or a user's in the channel. ``str()`` is how
    answers name it: ``#channel``, or ``user in #channel``."""

    channel: Named
    user: Named | None = None

    def __str__(self) -> str:
        return f"#{self.channel}" if self.user is None else f"{self.user} in #{self.channel}"

    def runs(self, store: LogStore, lo: int, hi: int, *, reverse: bool) -> AsyncIterator[Run]:
        """Its lines in ``[lo, hi)`` (epoch ms), oldest first unless ``reverse``, run by run."""
        if self.user is None:
            return store.channel_runs(self.channel, lo, hi, reverse=reverse)
        return store.user_runs(self.channel, self.user, lo, hi, reverse=reverse)

    async def random_event(self, store: LogStore) -> ChatEvent | None:
        """One of its events picked at random (:mod:`store.random_pick`); None when it has none."""
        if self.user is None:
            return await store.random_channel_event(self.channel)
        return await store.random_user_event(self.channel, self.user)

    async def newest(self, store: LogStore) -> tuple[int, ...] | None:
        """Its newest period with logs: a channel's UTC day ``(year, month, day)``, a user's month ``(year,
        month)``; None when it has none."""
        if self.user is None:
            day = await store.latest_day(self.channel)
            return None if day is None else (day.year, day.month, day.day)
        return await store.latest_user_month(self.channel, self.user)


async def resolve_subject(
    request: Request, ct: str, c: str, ut: str | None = None, u: str | None = None
) -> Subject:
    """The channel of ``/{ct}/{c}`` (:func:`resolve_channel`) and, with ``ut`` and ``u``, the user of
    ``/{ut}/{u}`` in it (:func:`resolve_user`)."""
    channel = await resolve_channel(request, ct, c)
    if ut is None or u is None:
        return Subject(channel)
    return Subject(channel, await resolve_user(request, channel, ut, u))
