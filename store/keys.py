"""The keys of every stored line: whose partition a line is in, and which part of it.

* **Channel and user keys** (:func:`channel_key`, :func:`user_key`): the Twitch ``room-id`` / ``user-id``
  when the line has one, else ``login:<login>``. A numeric id contains no ``:``, so the two forms never
  collide; a non-numeric id (never sent by Twitch; possible from a plain IRC server) becomes ``id:<id>``.
  A renamed channel or user keeps its id key, so it keeps one history.
* **Which user a line is filed under** (:func:`filed_under`): the user it concerns in the consent rule's
  sense (:func:`consent.rule.whose`: the sender, else the user a ban, a timeout or a deleted message
  targets); a line that concerns no user (a NOTICE, a cleared chat) is in no user's log.
* **Message ids** (:func:`message_uuid`): a Twitch ``id`` in canonical text is its own uuid; any other id
  (the hashed id of a line without one, an IRCv3 ``msgid``) is ``uuid5(MESSAGE_ID_NAMESPACE, id)``,
  deterministic, so the copies of a message (two replica groups, a replay) have one id wherever they are.
* **Periods**: a channel's lines are kept by UTC day, a user's by UTC calendar month (:func:`day_of`,
  :func:`month_of`); both are partitions of part 0 until a writer has written :data:`PART_BYTES` into one,
  then into a smaller part of the same period (:func:`channel_part`: the half hour of the day;
  :func:`user_part`: the day of the month), so no partition grows past ~100 MiB (docs/storage.md).

Pure; no driver.
"""

from __future__ import annotations

import calendar
import hashlib
import re
import time
import uuid
from typing import TYPE_CHECKING, Final

from consent.rule import whose

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent

LOGIN_KEY_PREFIX: Final = "login:"
"""Key of a channel or user without a Twitch id: its login under this prefix (a numeric id has no ':')."""
OTHER_ID_KEY_PREFIX: Final = "id:"
"""Key of an id that is not ASCII digits (never from Twitch): kept apart from numeric ids and logins."""

MESSAGE_ID_NAMESPACE: Final = uuid.UUID("df680883-ad37-5393-8360-f5fd0186965f")
"""uuid5 namespace of message ids that are not canonical uuids: uuid5(NAMESPACE_URL, "chatlog:message-id").
Never change it: stored lines are identified by uuid5(MESSAGE_ID_NAMESPACE, message_id), and a change would
store every such event twice."""

DAY_MS: Final = 86_400_000
HALF_HOUR_MS: Final = 1_800_000
PART_BYTES: Final = 10 * 2**20
"""Bytes of frames one writer (a Spark Python worker) writes into part 0 of a period before it writes the
rest of that period into its smaller parts. Nine such writers (worker restarts, replays) keep part 0 under
~100 MiB; a part is a half hour of a channel's day (a channel at 300 msg/s: 540,000 lines, ~80 MiB at the
~150 B a line of a live block) or a day of a user's month (a user at Twitch's moderator limit, 100 lines
per 30 s: 288,000 lines)."""


def _id_key(value: str | None, login: str | None) -> str | None:
    if value:
        if value.isascii() and value.isdigit():
            return value
        return OTHER_ID_KEY_PREFIX + value
    if login:
        return LOGIN_KEY_PREFIX + login.lower()
    return None


def channel_key(channel_id: str | None, channel_login: str) -> str:
    """The key of a channel's lines: its ``room-id``, else ``login:<channel login>``; ValueError when there
    is neither."""
    key = _id_key(channel_id, channel_login)
    if key is None:
        raise ValueError("a channel key needs a channel id or a channel login")
    return key


def user_key(user_id: str | None, user_login: str | None) -> str | None:
    """The key of a user's lines: the ``user-id``, else ``login:<user login>``; None for neither."""
    return _id_key(user_id, user_login)


def key_id(key: str) -> str | None:
    """The Twitch id a channel or user key holds; None for a login key."""
    if key.startswith(LOGIN_KEY_PREFIX):
        return None
    return key.removeprefix(OTHER_ID_KEY_PREFIX)


def login_key(login: str) -> str:
    """The key of ``login``'s lines that carry no id."""
    return LOGIN_KEY_PREFIX + login.lower()


def event_channel_key(event: ChatEvent) -> str:
    """The channel key of ``event``."""
    return channel_key(event.channel_id, event.channel)


def filed_under(event: ChatEvent) -> str | None:
    """The user key ``event`` is filed under (its sender's, else the target of a moderation event: the
    consent rule's :func:`~consent.rule.whose`); None when it concerns no user."""
    user_id = event.user_id
    if user_id:  # the common case, without building whose()
        return user_id if user_id.isascii() and user_id.isdigit() else OTHER_ID_KEY_PREFIX + user_id
    return user_key(*whose(event))


_CANONICAL_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NAMESPACE_BYTES: Final = MESSAGE_ID_NAMESPACE.bytes


def is_canonical_uuid(message_id: str) -> bool:
    """Whether ``message_id`` is a uuid in canonical text (lower-case ``8-4-4-4-12``): its own uuid."""
    return len(message_id) == 36 and _CANONICAL_UUID.fullmatch(message_id) is not None


def message_id_bytes(message_id: str) -> bytes:
    """The 16 bytes of a message id's uuid (see the module doc), made without a ``uuid.UUID``: what the
    writers key, frame and compare lines by. ValueError for an id that is not UTF-8 (a lone surrogate)."""
    if len(message_id) == 36 and _CANONICAL_UUID.fullmatch(message_id) is not None:
        return bytes.fromhex(message_id.replace("-", ""))
    digest = bytearray(
        hashlib.sha1(_NAMESPACE_BYTES + message_id.encode("utf-8"), usedforsecurity=False).digest()[:16]
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5, as uuid.uuid5 makes it
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    return bytes(digest)


def message_uuid(message_id: str) -> uuid.UUID:
    """The uuid of a message id (see the module doc); deterministic, and two different ids never share a
    uuid unless SHA-1 collides."""
    return uuid.UUID(bytes=message_id_bytes(message_id))


def uuid_text(id_bytes: bytes) -> str:
    """The canonical text of a uuid's 16 bytes (``str(uuid.UUID(bytes=...))``, without the object)."""
    h = id_bytes.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_LOW64: Final = (1 << 64) - 1


def line_order(sent_at_ms: int, message_id: bytes) -> tuple[int, int, int, int]:
    """The order of stored lines: by time, then as Cassandra orders uuids (by version: a Twitch id, v4,
    before a hashed id, v5, in the same millisecond; a time uuid, v1, by its time; any other by its bytes),
    the order the tables of earlier layouts kept, so every answer reads as it did."""
    n = int.from_bytes(message_id, "big")
    version = (n >> 76) & 0xF
    if version == 1:
        time_low, time_mid, time_hi = n >> 96, (n >> 80) & 0xFFFF, (n >> 64) & 0x0FFF
        return sent_at_ms, 1, (time_hi << 48) | (time_mid << 32) | time_low, n & _LOW64
    return sent_at_ms, version, n, 0


# -- periods ---------------------------------------------------------------------------------------------


def day_of(sent_at_ms: int) -> int:
    """The UTC day of a time: days since 1970-01-01."""
    return sent_at_ms // DAY_MS


def day_start_ms(day: int) -> int:
    return day * DAY_MS


def days_of(since_ms: int, until_ms: int) -> list[int]:
    """The days the range ``[since_ms, until_ms)`` touches, oldest first."""
    if until_ms <= since_ms:
        return []
    return list(range(day_of(since_ms), day_of(until_ms - 1) + 1))


def channel_part(sent_at_ms: int) -> int:
    """The part of a channel's day a line goes to once part 0 is full: 1 + its half hour of the day."""
    return 1 + (sent_at_ms % DAY_MS) // HALF_HOUR_MS


def month_of(sent_at_ms: int) -> int:
    """The UTC calendar month of a time as ``yyyymm``."""
    moment = time.gmtime(sent_at_ms // 1000)
    return moment.tm_year * 100 + moment.tm_mon


def month_start_ms(month: int) -> int:
    """Epoch ms of the first instant of ``month`` (``yyyymm``)."""
    return calendar.timegm((month // 100, month % 100, 1, 0, 0, 0)) * 1000


def month_end_ms(month: int) -> int:
    """Epoch ms of the first instant after ``month``."""
    year, mon = divmod(month, 100)
    year, mon = (year + 1, 1) if mon == 12 else (year, mon + 1)
    return calendar.timegm((year, mon, 1, 0, 0, 0)) * 1000


def months_of(since_ms: int, until_ms: int) -> list[int]:
    """The months the range ``[since_ms, until_ms)`` touches, oldest first."""
    if until_ms <= since_ms:
        return []
    out = [month_of(since_ms)]
    last = month_of(until_ms - 1)
    while out[-1] < last:
        out.append(month_of(month_end_ms(out[-1])))
    return out


def user_part(sent_at_ms: int) -> int:
    """The part of a user's month a line goes to once part 0 is full: its day of the month."""
    return time.gmtime(sent_at_ms // 1000).tm_mday
