"""The rename story the read side's store and CLI tests read back: user 1001 renamed after a day, channel
500 after two (:func:`rename_story`), and which of its events a channel's or the user's history holds, in
the order the store reads them."""

from __future__ import annotations

import calendar
import uuid

import msgspec

from schemas.chat_event import ChatEvent
from store.keys import event_channel_key, filed_under, line_order, message_id_bytes
from tests.integration.serve.events import line_event, privmsg

HOUR = 3_600_000
DAY = 24 * HOUR
T0 = calendar.timegm((2026, 1, 30, 12, 0, 0)) * 1000  # the story runs from January into February
CHANNEL_KEYS = {"500", "login:oldchan", "login:newchan"}
USER_KEYS = {"1001", "login:oldname", "login:newname"}


def user_at(at: int) -> str:
    return "oldname" if at < T0 + DAY else "newname"


def channel_at(at: int) -> str:
    return "oldchan" if at < T0 + 2 * DAY else "newchan"


def says(at: int, login: str, user_id: str | None, text: str, *, channel: str | None = None) -> ChatEvent:
    room = None if channel is not None else "500"
    return privmsg(
        channel or channel_at(at),
        at,
        login,
        text,
        user_id=user_id,
        room_id=room,
        message_id=str(uuid.uuid4()) if user_id else None,
    )


def rename_story() -> list[ChatEvent]:
    """User 1001 is `oldname` for a day, then `newname`; channel 500 is `oldchan` for two days, then
    `newchan`; 6 days from 2026-01-30 into February. Besides: another user, a plain IRC user and lines of
    1001 without ids, timeouts and a deleted message of 1001, a burst of 300 lines in one hour, lines of
    two keys at the same millisecond, and 1001 in another channel."""
    out = []
    for k in range(24):
        at = T0 + k * 6 * HOUR + 1234
        out.append(says(at, user_at(at), "1001", f"u{k}"))
        out.append(says(at + 1000, "other", "2002", f"o{k}"))
        if k % 4 == 0:  # a plain IRC line (no room-id, no user-id): keyed by logins
            out.append(says(at + 2000, "ircuser", None, f"irc{k}", channel=channel_at(at)))
        if k % 5 == 0:  # a timeout of 1001 (no sender: in 1001's rows by target-user-id)
            out.append(
                line_event(
                    "CLEARCHAT",
                    channel_at(at),
                    at + 3000,
                    text=user_at(at),
                    user_id="1001",
                    room_id="500",
                    extra={"ban-duration": "60"},
                )
            )
        if k == 10:  # a deleted message of 1001 (its `login` tag, no id: keyed login:<name>)
            out.append(
                line_event(
                    "CLEARMSG",
                    channel_at(at),
                    at + 4000,
                    login=user_at(at),
                    text="u9",
                    message_id=str(uuid.uuid4()),
                )
            )
        if k == 15:  # 1001 through a plain IRC server: its login only
            out.append(says(at + 5000, user_at(at), None, f"plain{k}", channel=channel_at(at)))
        if k % 6 == 1:
            out.append(
                line_event(
                    "PRIVMSG", "elsewhere", at, login=user_at(at), text="away", user_id="1001", room_id="600"
                )
            )
    burst = T0 + 3 * DAY + 10 * 60_000  # 300 lines in 150 s: more than a page of a user's month
    out += [says(burst + i * 500, "newname", "1001", f"burst{i}") for i in range(300)]
    tie = T0 + 4 * DAY + 777  # one millisecond, two keys: Twitch uuids (v4) and a hashed id (v5)
    out += [says(tie, "other", "2002", "tie a"), says(tie, "other", "2002", "tie b")]
    out.append(says(tie, "ircuser", None, "tie plain", channel="newchan"))
    return out


def in_read_order(events: list[ChatEvent], *, reverse: bool = False) -> list[ChatEvent]:
    ordered = sorted(
        events, key=lambda e: line_order(e.sent_at, message_id_bytes(e.message_id)), reverse=reverse
    )
    return [msgspec.structs.replace(e, ingester=None) for e in ordered]


def of_channel(events: list[ChatEvent]) -> list[ChatEvent]:
    return [e for e in events if event_channel_key(e) in CHANNEL_KEYS]


def of_user(events: list[ChatEvent]) -> list[ChatEvent]:
    return [e for e in of_channel(events) if filed_under(e) in USER_KEYS]
