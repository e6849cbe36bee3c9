"""Opt-outs on the executors: which events the write step must not write (issue 20).

The driver reads the opt-out registry (``chatlog.optout``, :mod:`sink.driver.optouts`) and hands each
micro-batch (or backfill) the sets it holds at that batch's start, as an :class:`OptOuts` captured by the
partition task (:func:`sink.executor.partition.partition_task`): one consistent set per batch, shipped
with the task (pyspark broadcasts a task larger than 1 MiB by itself). The check is a few set look-ups
per event, done before any row of the event is built.

An event is dropped when its sender's ``user_id`` opted out, when its channel's ``channel_id`` did, when
it is a ban or timeout (CLEARCHAT) whose ``target-user-id`` did, or when it names its user by login only
(a deleted message, CLEARMSG, names its author by ``login``; a line without Twitch ids) and that login is
one the registry's users were seen with (``logins``, read by the driver from the name history) or one
whose digest an erasure kept (``login_digests``: an erased user's name history is gone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from consent.records import login_digest

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent

_TARGETED: Final = frozenset({"CLEARCHAT", "CLEARMSG"})


@dataclass(frozen=True)
class OptOuts:
    """Opted-out Twitch user ids and channel (room) ids, and the logins of those users."""

    users: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    logins: frozenset[str] = frozenset()
    login_digests: frozenset[str] = frozenset()
    """:func:`consent.records.login_digest` of the logins their erasures kept (the names are gone)."""

    def __bool__(self) -> bool:
        return bool(self.users or self.channels)

    def drops(self, event: ChatEvent) -> bool:
        """Whether ``event`` belongs to an opted-out user or channel (see the module doc)."""
        channel_id = event.channel_id
        if channel_id is not None and channel_id in self.channels:
            return True
        user_id = event.user_id
        if user_id is not None:
            return user_id in self.users
        if event.kind in _TARGETED:
            target = event.tags.get("target-user-id")
            if target is not None and target in self.users:
                return True
        login = event.user_login
        if login is None:
            return False
        if login in self.logins:
            return True
        return bool(self.login_digests) and login_digest(login) in self.login_digests
