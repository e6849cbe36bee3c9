"""The Cassandra schema from ``cassandra.cql`` (the one place it is defined)."""

from __future__ import annotations

import ast
import calendar
import re
import time
import uuid
from collections.abc import Mapping
from importlib import resources
from typing import Final

BUCKET_MS = 5 * 60 * 1000
"""Width of a ``chat_by_channel`` time bucket (its partition key, and a ``chat_buckets`` row); see the sizing
note in cassandra.cql."""


STRATEGIES = ("SimpleStrategy", "NetworkTopologyStrategy")
_LOCATOR = re.compile(r"org\.apache\.cassandra\.locator\.[A-Za-z][A-Za-z0-9_]{0,63}")
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}")  # 'class', 'replication_factor', a DC name
_VALUE = re.compile(r"[A-Za-z0-9_.\-/]{1,64}")  # a class name, '3', '3/1' (transient replicas)
_MAX_TEXT = 2000
_MAX_REPLICAS = 1000


def replication_map(text: str) -> dict[str, str | int]:
    """The replication map in ``text`` (``{'class': 'SimpleStrategy', 'replication_factor': 1}``).

    A literal (``ast.literal_eval``, no code runs) dict of safe names to safe strings or small integers,
    whose ``'class'`` is a Cassandra replication strategy; ValueError otherwise. Nothing that could end
    the CQL string or statement (quotes, ``;``, comments) passes.
    """
    if len(text) > _MAX_TEXT:
        raise ValueError(f"replication map longer than {_MAX_TEXT} characters")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(
            "not a map literal such as {'class': 'SimpleStrategy', 'replication_factor': 1}"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("not a map literal such as {'class': 'SimpleStrategy', 'replication_factor': 1}")
    out: dict[str, str | int] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(f"replication key {str(key)[:40]!r}: letters, digits, _ . - only")
        count = isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= _MAX_REPLICAS
        if count or (isinstance(item, str) and _VALUE.fullmatch(item)):
            out[key] = item
        else:
            raise ValueError(
                f"replication value of {key!r}: a count 0..{_MAX_REPLICAS} or a name of A-Z a-z 0-9 _ . - /"
            )
    strategy = out.get("class")
    if not isinstance(strategy, str) or not (strategy in STRATEGIES or _LOCATOR.fullmatch(strategy)):
        raise ValueError(f"'class' must be {' or '.join(STRATEGIES)} (or org.apache.cassandra.locator.*)")
    return out


def render_replication(replication: Mapping[str, str | int]) -> str:
    """CQL for a map from :func:`replication_map`: every value rendered from the parsed one."""
    items = (f"'{k}': {v}" if isinstance(v, int) else f"'{k}': '{v}'" for k, v in replication.items())
    return "{" + ", ".join(items) + "}"


def normalize_replication(text: str) -> str:
    """``text`` parsed and rendered back (ValueError when it is not a safe replication map)."""
    return render_replication(replication_map(text))


def statements(keyspace: str, replication: str) -> list[str]:
    """The CQL statements, filled in, comments removed, in order."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,47}", keyspace):
        raise ValueError(f"invalid keyspace name {keyspace!r}: lower-case letters, digits and _ only")
    replication = normalize_replication(replication)
    text = resources.files("schemas").joinpath("cassandra.cql").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    text = text.format(keyspace=keyspace, replication=replication)
    return [s.strip() for s in text.split(";") if s.strip()]


def bucket_of(sent_at_ms: int) -> int:
    """Start (epoch ms) of the time bucket that holds ``sent_at_ms``."""
    return sent_at_ms - sent_at_ms % BUCKET_MS


# -- keys of the id-keyed tables (issue 17, layout E64s; docs/storage.md) -------------------------------

PARTITION_LIMIT_BYTES: Final = 100 * 2**20
"""No partition may grow past this (issue 17: ~100 MB), for the rates below."""
MODERATOR_MSGS_PER_S: Final = 100 / 30
"""Twitch's limit for a moderator (100 messages per 30 s): the fastest one user can write, every day."""
CHANNEL_MSGS_PER_S: Final = 300.0
"""The busiest channel the layout is sized for."""
CHANNEL_ROW_BYTES: Final = 565.5
"""Uncompressed bytes of one channel-table row holding the whole raw line (no value stripped, text id)
inside a large partition: results/bench_storage.json, layout C64, chat_by_channel,
row_bytes_in_large_partition (E64s stores less: 495.4; lines without ids are not stripped)."""
USER_PERIOD_MS: Final = 43_200_000
"""A user's partition in a channel spans half a UTC day: a calendar month is 56-62 of them, and a user at
Twitch's moderator limit stays under 100 MiB in one (each row holds the line: :data:`CHANNEL_ROW_BYTES`)."""

LOGIN_KEY_PREFIX: Final = "login:"
"""Key of a channel or user without a Twitch id: its login under this prefix (a numeric id has no ':')."""
OTHER_ID_KEY_PREFIX: Final = "id:"
"""Key of an id that is not ASCII digits (never from Twitch; a plain IRC server's tag): kept apart from
both numeric ids and logins."""

MESSAGE_ID_NAMESPACE: Final = uuid.UUID("df680883-ad37-5393-8360-f5fd0186965f")
"""uuid5 namespace of message ids that are not canonical uuids: uuid5(NAMESPACE_URL, "chatlog:message-id").
Never change it: rows already stored are keyed by uuid5(MESSAGE_ID_NAMESPACE, message_id), and a change
would store every such event twice."""


def _id_key(value: str | None, login: str | None) -> str | None:
    if value:
        if value.isascii() and value.isdigit():
            return value
        return OTHER_ID_KEY_PREFIX + value
    if login:
        return LOGIN_KEY_PREFIX + login.lower()
    return None


def key_id(key: str) -> str | None:
    """The Twitch id a channel or user key holds (:func:`channel_key`, :func:`user_key`); None for a login
    key."""
    if key.startswith(LOGIN_KEY_PREFIX):
        return None
    return key.removeprefix(OTHER_ID_KEY_PREFIX)


def channel_key(channel_id: str | None, channel_login: str) -> str:
    """The channel tables' key: the ``room-id`` when the line has one, else ``login:<channel login>``.

    A numeric id is kept as it is; another non-empty id becomes ``id:<id>``; so an id key and a login
    key never collide. ValueError when there is neither an id nor a login."""
    key = _id_key(channel_id, channel_login)
    if key is None:
        raise ValueError("a channel key needs a channel id or a channel login")
    return key


def user_key(user_id: str | None, user_login: str | None) -> str | None:
    """The user table's key: the ``user-id`` when present, else ``login:<user login>``; ``None`` when
    the event has no sender (a CLEARCHAT or NOTICE from the server: it gets no user row)."""
    return _id_key(user_id, user_login)


_CANONICAL_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_canonical_uuid(message_id: str) -> bool:
    """Whether ``message_id`` is a uuid in canonical text (lower-case ``8-4-4-4-12``): its own uuid."""
    return _CANONICAL_UUID.fullmatch(message_id) is not None


def message_uuid(message_id: str) -> uuid.UUID:
    """The ``message_id uuid`` column of an event: its id when that is a uuid in canonical text (Twitch's
    lower-case ``8-4-4-4-12`` form), else uuid5 over :data:`MESSAGE_ID_NAMESPACE` (hashed ids of
    plain IRC lines, IRCv3 ``msgid``, any other spelling of a uuid). Deterministic, and two different
    ids never share a uuid unless SHA-1 collides."""
    if _CANONICAL_UUID.fullmatch(message_id) is not None:
        return uuid.UUID(message_id)
    return uuid.uuid5(MESSAGE_ID_NAMESPACE, message_id)


def user_period(sent_at_ms: int) -> int:
    """The user table's period of a time: the half UTC day it falls in, ``sent_at_ms // USER_PERIOD_MS``."""
    return sent_at_ms // USER_PERIOD_MS


def period_start_ms(period: int) -> int:
    """Epoch ms of the first instant of ``period``."""
    return period * USER_PERIOD_MS


def user_periods(since_ms: int, until_ms: int) -> list[int]:
    """The half-day periods the range ``[since_ms, until_ms)`` touches, oldest first (empty when it is
    empty)."""
    if until_ms <= since_ms:
        return []
    return list(range(user_period(since_ms), user_period(until_ms - 1) + 1))


# -- a user's month in one partition (issue 35, docs/storage.md "A user's month") ------------------------

MONTH_PERIOD_SCALE: Final = 100
"""A month partition's ``period`` is ``yyyymm * 100`` (202611 -> 20261100): above every half-day
number (``sent_at // 43.2M``: 5,865,793 at the end of year 9999) and every old pointer period
(``yyyymm * 10 + part``: at most 9,999,124)."""
MONTH_PERIOD_MIN: Final = 100_001 * MONTH_PERIOD_SCALE
"""The smallest month period (January of year 1000): a period at least this is a month."""
USER_MONTH_ROWS: Final = 20_000
"""Rows a sink process writes into one user's month partition before it spills that user-month into
half-day partitions (the default of ``CHATLOG_SINK_USER_MONTH_ROWS``): 20,000 x 565.5 B = 10.8 MiB."""
SPILL_WRITERS: Final = 9
"""The partition bound holds for a month partition written by this many sink processes up to their cap
(each restart of a Spark Python worker starts counting again; a replay writes up to the cap anew)."""


def is_month_period(period: int) -> bool:
    """Whether ``period`` names a month partition (else a half day)."""
    return period >= MONTH_PERIOD_MIN


def month_period(sent_at_ms: int) -> int:
    """The month partition of a time: ``yyyymm * 100`` of its UTC calendar month."""
    moment = time.gmtime(sent_at_ms // 1000)
    return (moment.tm_year * 100 + moment.tm_mon) * MONTH_PERIOD_SCALE


def month_start_ms(period: int) -> int:
    """Epoch ms of the first instant of month period ``period``."""
    yyyymm = period // MONTH_PERIOD_SCALE
    return calendar.timegm((yyyymm // 100, yyyymm % 100, 1, 0, 0, 0)) * 1000


def month_end_ms(period: int) -> int:
    """Epoch ms of the first instant after month period ``period``."""
    yyyymm = period // MONTH_PERIOD_SCALE
    year, month = divmod(yyyymm, 100)
    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return calendar.timegm((year, month, 1, 0, 0, 0)) * 1000


def month_periods(since_ms: int, until_ms: int) -> list[int]:
    """The month periods the range ``[since_ms, until_ms)`` touches, oldest first."""
    if until_ms <= since_ms:
        return []
    out = [month_period(since_ms)]
    last = month_period(until_ms - 1)
    while out[-1] < last:
        out.append(month_period(month_end_ms(out[-1])))
    return out


def half_days_of(month: int, since_ms: int, until_ms: int) -> list[int]:
    """The half-day periods of month period ``month`` within ``[since_ms, until_ms)``."""
    return user_periods(max(since_ms, month_start_ms(month)), min(until_ms, month_end_ms(month)))


HALF_DAY_MAX: Final = 1_000_000
"""Half-day periods are below this (the year 3338); the old pointer periods (``yyyymm * 10 + part``) between
it and :data:`MONTH_PERIOD_MIN` are no longer read."""


def is_half_day(period: int) -> bool:
    """Whether ``period`` names a half-day partition."""
    return period < HALF_DAY_MAX


def month_of(period: int) -> int:
    """The month period a period lies in (itself for a month period)."""
    return period if is_month_period(period) else month_period(period_start_ms(period))


_LOW64: Final = (1 << 64) - 1


def clustering_order(sent_at_ms: int, message_id: uuid.UUID) -> tuple[int, int, int, int]:
    """Cassandra's clustering order of ``(sent_at, message_id uuid)``: by time, then by the uuid's version
    (a Twitch id, v4, before a hashed id, v5, in the same millisecond), then a time uuid (v1) by its time,
    any other by its bytes."""
    n = message_id.int
    version = (n >> 76) & 0xF
    if version == 1:
        return sent_at_ms, 1, message_id.time, n & _LOW64
    return sent_at_ms, version, n, 0
