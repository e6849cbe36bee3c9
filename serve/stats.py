"""rustlog's stats of a channel or of a user in it, counted from what the store gives.

Shapes (rustlog ``src/web/schema.rs``): a channel's ``{"messageCount", "topChatters": [{"userId",
"userLogin", "messageCount"}]}`` (its :data:`TOP_CHATTERS` busiest senders, busiest first); a user's
``{"userId", "userLogin", "messageCount"}``. rustlog counts every stored event (bans and notices too) and
ranks senders by Twitch id; chatlog ranks by login, as the lines name them (``userId``: the id its events
carry, ``""`` when none does).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Final

from store.line import aclose

TOP_CHATTERS: Final = 5


class TooManyEvents(Exception):
    """The range holds more events than the counting budget."""


@dataclass(slots=True)
class Tally:
    """Events and events by sender login, with the last id seen for each login."""

    total: int = 0
    by_login: Counter[str] = field(default_factory=Counter)
    ids: dict[str, str] = field(default_factory=dict)

    def add(self, login: str | None, user_id: str | None) -> None:
        self.total += 1
        if login:
            self.by_login[login] += 1
            if user_id:
                self.ids[login] = user_id

    def channel_stats(self, top: int = TOP_CHATTERS) -> dict[str, Any]:
        ranked = sorted(self.by_login.items(), key=lambda item: (-item[1], item[0]))[:top]
        chatters = [user_stats(login, self.ids.get(login), n) for login, n in ranked]
        return {"messageCount": self.total, "topChatters": chatters}


def user_stats(login: str, user_id: str | None, count: int) -> dict[str, Any]:
    return {"userId": user_id or "", "userLogin": login, "messageCount": count}


async def tally(senders: AsyncIterator[tuple[str | None, str | None]], budget: int) -> Tally:
    """Count ``senders``; :class:`TooManyEvents` past ``budget`` events (the rest is not read)."""
    counted = Tally()
    try:
        async for login, user_id in senders:
            if counted.total >= budget:
                raise TooManyEvents(f"more than {budget:,} events")
            counted.add(login, user_id)
    finally:
        await aclose(senders)
    return counted
