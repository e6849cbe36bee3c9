"""The opt-out rule, once: whose event this is, and whether an opt-out drops (ingest, sink) or hides (serve,
live) it. Every process that enforces consent calls this module; none decides on its own.

Whose: an event concerns its channel (``channel_id``, the Twitch ``room-id``) and one user, the sender
(``user_id``/``user_login``) or, for a ban, a timeout or a deleted message (the server sends those), the
user it targets: CLEARCHAT's ``target-user-id`` and the login in its text, CLEARMSG's ``login`` tag (a
CLEARMSG carries no user id). :func:`whose` gives that user, and the storage files the event under it (the
user's copy of its lines, :mod:`store.keys`), so erasure finds exactly the lines the sink wrote.

Whether: :func:`verdict` is :data:`OUT` when the channel or the user's id opted out, :data:`BY_LOGIN` when
the event names its user by login only (no id: a deleted message, a ban read back from its text, a line
without Twitch ids) -- then the caller resolves the login the way its process can (the ingester and the
live stream by the logins they saw opted-out users send with, the sink by the name history and the
digests erasure kept, the read store by the login's newest id) -- and :data:`IN` otherwise.
:func:`opted_out` puts the two together for a caller whose login check is a plain function.

Cost: two or three set look-ups and no allocation for the common case (a PRIVMSG with ids); the ingester
calls it for every line.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from consent.records import login_digest
from core.irc_parse import MODERATION_KINDS

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent

Verdict = Literal["in", "out", "by-login"]
IN: Final[Verdict] = "in"
OUT: Final[Verdict] = "out"
BY_LOGIN: Final[Verdict] = "by-login"


def target_login(event: ChatEvent) -> str | None:
    """The login a moderation event names: CLEARMSG's ``login`` tag, CLEARCHAT's text (the banned or timed
    out user; a cleared chat has none); None for other kinds."""
    kind = event.kind
    if kind == "CLEARMSG":
        return event.tags.get("login") or None
    if kind == "CLEARCHAT":
        return event.text or None
    return None


def whose(event: ChatEvent) -> tuple[str | None, str | None]:
    """``(user id, login)`` of the user ``event`` concerns: its sender's, else the user a moderation event
    targets; ``(None, None)`` for neither (a cleared chat, a NOTICE). The login is as the line gives it."""
    user_id, login = event.user_id, event.user_login
    if (user_id or login) or event.kind not in MODERATION_KINDS:
        return user_id, login
    return event.tags.get("target-user-id") or None, target_login(event)


def verdict(event: ChatEvent, users: AbstractSet[str], channels: AbstractSet[str]) -> Verdict:
    """Whether the opt-outs ``users`` and ``channels`` (Twitch ids) take ``event`` out (the module doc)."""
    channel_id = event.channel_id
    if channel_id is not None and channel_id in channels:
        return OUT
    user_id = event.user_id
    if user_id is not None:  # the sender's id: the common case, decided without building whose()
        return OUT if user_id in users else IN
    user_id, login = whose(event)
    if user_id is not None:
        return OUT if user_id in users else IN
    return BY_LOGIN if login and users else IN


def keyed_verdict(
    channel_id: str, user_id: str, users: AbstractSet[str], channels: AbstractSet[str]
) -> Verdict:
    """:func:`verdict` of every event the sink keyed under the channel id ``channel_id`` and the user id
    ``user_id`` (a stored line of a channel id key filed under a user id key: the event's ``channel_id``
    and :func:`whose` user id are those), without reading it. For a line that does not parse (then
    :func:`verdict` knows no id) it errs on the side of the opt-out."""
    return OUT if channel_id in channels or user_id in users else IN


def named_login(event: ChatEvent) -> str | None:
    """The login to resolve when :func:`verdict` says :data:`BY_LOGIN`, lower case and trimmed."""
    login = whose(event)[1]
    return login.strip().lower() or None if login else None


def opted_out(
    event: ChatEvent, users: AbstractSet[str], channels: AbstractSet[str], login_out: Callable[[str], bool]
) -> bool:
    """:func:`verdict`, with ``login_out`` deciding for an event that names its user by login only."""
    found = verdict(event, users, channels)
    if found is BY_LOGIN:
        login = named_login(event)
        return login is not None and login_out(login)
    return found is OUT


@dataclass(frozen=True)
class OptOutSet:
    """Opted-out Twitch user ids and channel (room) ids at one moment, with the logins known to belong to
    those users (``logins``) and the digests of the logins their erasures kept (``login_digests``,
    :func:`consent.records.login_digest`: the names themselves are gone). The sink ships one per batch."""

    users: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    logins: frozenset[str] = frozenset()
    login_digests: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.users or self.channels)

    def login_out(self, login: str) -> bool:
        """Whether ``login`` (lower case) is one an opted-out user was seen with or erased under."""
        if login in self.logins:
            return True
        return bool(self.login_digests) and login_digest(login) in self.login_digests

    def drops(self, event: ChatEvent) -> bool:
        """Whether ``event`` belongs to an opted-out user or channel (:func:`opted_out`)."""
        return opted_out(event, self.users, self.channels, self.login_out)


class SeenLogins:
    """The logins opted-out users were seen sending with, learned from the lines a process reads (the
    ingester, the live stream): what resolves a deleted message that names its author by login only.
    Bounded: past ``most`` logins it starts again (a login is learned again from its user's next line)."""

    def __init__(self, most: int = 100_000) -> None:
        self._logins: set[str] = set()
        self._most = most

    def __contains__(self, login: object) -> bool:
        return login in self._logins

    def __len__(self) -> int:
        return len(self._logins)

    def learn(self, event: ChatEvent, users: AbstractSet[str]) -> None:
        """Remember the sender's login when its user id is one of the opted-out ``users``."""
        user_id, login = event.user_id, event.user_login
        if user_id is None or login is None or user_id not in users or login in self._logins:
            return
        if len(self._logins) >= self._most:
            self._logins.clear()
        self._logins.add(login)
