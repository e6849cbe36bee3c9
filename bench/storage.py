"""``chatlog bench storage``: bytes on disk, write rate and Cassandra CPU per message of candidate layouts.

The measurements that decide issue 17's storage layout. One corpus of ``messages`` realistic Twitch
PRIVMSG lines with full tags (:func:`corpus`: channels of Zipf-like sizes, each with its own chatters
of whom a few say much and most say little, spread over ``days``) is written into each candidate layout
(:data:`LAYOUTS`), each in its own scratch keyspace (dropped at the end), with the same client code:
prepared statements through ``cassandra.concurrent.execute_concurrent``.

Per layout:

* bytes on disk per message: the sum of the ``*-Data.db`` files of the layout's tables after a flush
  and a major compaction (the stack has no nodetool/JMX client: ``ALTER TABLE ... WITH
  memtable_flush_period_in_ms`` flushes the memtable, and a size-tiered strategy whose buckets take
  every SSTable with ``min_threshold`` 2 compacts them into one), and its ratio to the raw line's size;
* the uncompressed bytes of the same SSTables (``dataLength`` of ``*-CompressionInfo.db``), and from
  them the bytes of one row inside a large partition (partition headers taken out), which feed the
  partition-bound arithmetic (:func:`partition_bounds`);
* rows/s written, and Cassandra's CPU (utime + stime of its process from /proc) per message during
  the writes and during the flush and compaction. The stack is shared: other work on the machine
  shows up in the CPU figures, so they are upper bounds.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
import statistics
import struct
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError
from core.settings import StackSettings

SEED: Final = 20261117
T0_MS: Final = 1_793_491_200_000
"""2026-11-01T00:00:00Z: the corpus starts at a month's first instant."""

MODERATOR_MSGS_PER_S: Final = 100 / 30
"""Twitch's limit for a moderator (and a broadcaster, a VIP): 100 messages per 30 s."""
CHANNEL_MSGS_PER_S: Final = 300.0
"""The busiest channel the bound must hold for."""
PARTITION_LIMIT_MIB: Final = 100.0
MONTH_DAYS: Final = 31
JUSTLOG_BYTES_PER_MESSAGE: Final = 216
JUSTLOG_RATIO: Final = 0.42

# -- the corpus ----------------------------------------------------------------------------------

_WORD_TEXT: Final = (
    "Kappa Keepo PogChamp LUL monkaS OMEGALUL KEKW Pog 5Head gg wp nice clip that play was insane what "
    "is this song chat is so fast today lets go pepeLaugh catJAM Clap first time here hello when stream "
    "ends can we get a W in the chat modCheck copium forsenE EZ nerd ratio true based the a to and I you "
    "it of for on no yes why how lol lmao bro dude actually literally never always again streamer game "
    "boss fight run reset chat widepeepoHappy Sadge peepoClap HUH Aware Clueless ICANT"
)
_WORDS: Final = tuple(_WORD_TEXT.split(" "))
_UNICODE: Final = (
    "こんにちは",
    "你好\uff0c直播间",
    "안녕하세요",
    "Привет чат",
    "😂😂😂",
    "🔥🔥",
    "ÜBERRASCHUNG",
    "¿qué pasa?",
)
_BADGE_SETS: Final = (
    ("", ""),
    ("", "no_audio/1"),
    ("subscriber/{m}", "subscriber/{t},premium/1"),
    ("subscriber/{m}", "subscriber/{t},sub-gifter/5"),
    ("subscriber/{m}", "subscriber/{t},bits/1000"),
    ("subscriber/{m}", "vip/1,subscriber/{t},bits/100"),
    ("subscriber/{m}", "moderator/1,subscriber/{t},partner/1"),
    ("", "glhf-pledge/1"),
    ("", "turbo/1"),
)
_BADGE_WEIGHTS: Final = (30, 6, 20, 10, 10, 3, 2, 4, 3)
_COLORS: Final = ("", "#FF0000", "#1E90FF", "#9ACD32", "#FF69B4", "#DAA520", "#8A2BE2", "#00FF7F", "#FF4500")
_EMOTES: Final = (
    ("25", "Kappa"),
    ("88", "PogChamp"),
    ("425618", "LUL"),
    ("emotesv2_dcd06b30a5c24f6eb871e8f5edbd44f7", "KEKW"),
    ("emotesv2_7bb3e4d5c4a24c2bbbe7b0b2fd1bf7e6", "Pog"),
    ("emotesv2_89f3f0761c7b4f708061e9e4be3b7d17", "Sadge"),
    ("emotesv2_0ed6b8fdc5d94c5ab8cd6e4c1a8a0d1e", "catJAM"),
)
_SYLLABLES: Final = (
    "xx",
    "the",
    "real",
    "pro",
    "gamer",
    "lul",
    "kek",
    "zz",
    "mr",
    "ninja",
    "cat",
    "dog",
    "fox",
)


@dataclass(frozen=True)
class Chatter:
    """A chatter of the corpus: the same name, id, colour and badges on every line they say."""

    login: str
    user_id: str
    display: str
    color: str
    badge_info: str
    badges: str
    nonce: bool  # sends a client-nonce (web and most third-party clients)


def _login(rng: random.Random) -> str:
    parts = [rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))]
    login = "_".join(parts) if rng.random() < 0.3 else "".join(parts)
    if rng.random() < 0.6:
        login += str(rng.randint(0, 9999))
    return login[:25]


def chatter(rng: random.Random) -> Chatter:
    """A new chatter drawn from ``rng``."""
    login = _login(rng)
    info, badges = rng.choices(_BADGE_SETS, weights=_BADGE_WEIGHTS)[0]
    months = rng.randint(1, 80)
    tier = 3000 + months if rng.random() < 0.1 else months
    return Chatter(
        login=login,
        user_id=str(rng.randint(10_000_000, 999_999_999)),
        display=login.capitalize() if rng.random() < 0.7 else login,
        color=rng.choice(_COLORS),
        badge_info=info.format(m=months),
        badges=badges.format(t=tier),
        nonce=rng.random() < 0.9,
    )


def _text(rng: random.Random) -> tuple[str, str]:
    """(message text, emotes tag) of a chat message: a few words, sometimes an emote run or non-Latin."""
    words = [rng.choice(_WORDS) for _ in range(max(1, int(rng.expovariate(1 / 10))))]
    if rng.random() < 0.1:
        words.insert(0, rng.choice(_UNICODE))
    text = " ".join(words)[:500]
    emotes = []
    for emote_id, name in _EMOTES:
        spans = []
        at = 0
        for word in text.split(" "):
            if word == name:
                spans.append(f"{at}-{at + len(word) - 1}")
            at += len(word) + 1
        if spans:
            emotes.append(f"{emote_id}:{','.join(spans)}")
    return text, "/".join(emotes)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\:").replace(" ", "\\s")


def privmsg(
    rng: random.Random, user: Chatter, channel: str, room_id: str, ts: int, parent: str | None
) -> str:
    """One PRIVMSG line of ``user`` in ``channel`` at ``ts`` with Twitch's full tags; a reply to
    ``parent`` (``login<TAB>user id<TAB>body``) when given."""
    text, emotes = _text(rng)
    reply = ""
    if parent is not None:  # a reply: Twitch adds the parent's body, id and author
        p_login, p_id, p_body = parent.split("\t", 2)
        reply = (
            f"reply-parent-display-name={p_login.capitalize()};reply-parent-msg-body={_escape(p_body)};"
            f"reply-parent-msg-id={uuid.UUID(int=rng.getrandbits(128), version=4)};"
            f"reply-parent-user-id={p_id};reply-parent-user-login={p_login};"
            f"reply-thread-parent-display-name={p_login.capitalize()};"
            f"reply-thread-parent-msg-id={uuid.UUID(int=rng.getrandbits(128), version=4)};"
            f"reply-thread-parent-user-id={p_id};reply-thread-parent-user-login={p_login};"
        )
        text = f"@{p_login} {text}"
    nonce = f"client-nonce={rng.getrandbits(128):032x};" if user.nonce else ""
    first = int(rng.random() < 0.01)
    tags = (
        f"badge-info={user.badge_info};badges={user.badges};{nonce}color={user.color};"
        f"display-name={user.display};emotes={emotes};first-msg={first};flags=;"
        f"id={uuid.UUID(int=rng.getrandbits(128), version=4)};mod={int('moderator' in user.badges)};"
        f"{reply}returning-chatter=0;room-id={room_id};subscriber={int('subscriber' in user.badges)};"
        f"tmi-sent-ts={ts};turbo={int('turbo' in user.badges)};user-id={user.user_id};"
        f"user-type={'mod' if 'moderator' in user.badges else ''}"
    )
    if rng.random() < 0.02:
        text = f"\x01ACTION {text}\x01"
    return f"@{tags} :{user.login}!{user.login}@{user.login}.tmi.twitch.tv PRIVMSG #{channel} :{text}"


def corpus(messages: int, *, days: float = 1.0, seed: int = SEED) -> list[str]:
    """``messages`` Twitch PRIVMSG lines with full tags, in time order over ``days`` from :data:`T0_MS`.

    Channels (one per 10k messages, at least 3) get Zipf-sized shares of the messages; each channel has a
    pool of chatters (~one per 5 of its messages) who are picked with Zipf weights (s = 0.9), so most say
    one or two things and a few say hundreds, as in a real chat. ~10 % of the lines are replies (with
    Twitch's reply-parent tags), ~2 % ``/me``. The same seed gives the same lines everywhere.
    """
    if messages < 1:
        raise ValueError(f"messages must be positive, got {messages}")
    rng = random.Random(seed)
    n_channels = max(3, messages // 10_000)
    shares = [1 / (rank + 1) for rank in range(n_channels)]
    channel_cum = list(itertools.accumulate(shares))
    channels = [(f"{_login(rng)}tv", str(rng.randint(10_000_000, 999_999_999))) for _ in range(n_channels)]
    pools: list[tuple[list[Chatter], list[float]]] = []
    expected = [messages * s / sum(shares) for s in shares]
    for count in expected:
        size = max(5, int(count / 5))
        cum = list(itertools.accumulate(1 / (r + 1) ** 0.9 for r in range(size)))
        pools.append(([chatter(rng) for _ in range(size)], cum))
    span_ms = days * 86_400_000
    last: dict[int, str] = {}
    lines = []
    for i in range(messages):
        c = rng.choices(range(n_channels), cum_weights=channel_cum)[0]
        users, weights = pools[c]
        user = rng.choices(users, cum_weights=weights)[0]
        ts = T0_MS + int(i * span_ms / messages) + rng.randint(0, 999)
        channel, room_id = channels[c]
        parent = last.get(c) if rng.random() < 0.1 else None
        line = privmsg(rng, user, channel, room_id, ts, parent)
        last[c] = f"{user.login}\t{user.user_id}\t{line.split(' :', 2)[-1][:120]}"
        lines.append(line)
    return lines


def corpus_stats(lines: Sequence[str]) -> dict[str, Any]:
    """What the corpus is: raw line sizes, channels, chatters and messages per chatter."""
    from core.irc_parse import parse_line

    sizes = [len(line.encode()) for line in lines]
    per_user: Counter[tuple[str, str]] = Counter()
    per_channel: Counter[str] = Counter()
    for line in lines:
        event = parse_line(line, received_at=T0_MS)
        if event is None:
            raise ValueError(f"not a chat line: {line[:80]!r}")
        per_user[(event.channel, event.user_login or "")] += 1
        per_channel[event.channel] += 1
    counts = sorted(per_user.values())
    return {
        "messages": len(lines),
        "raw_bytes_mean": round(statistics.fmean(sizes), 1),
        "raw_bytes_median": statistics.median(sizes),
        "raw_bytes_p99": sorted(sizes)[int(0.99 * (len(sizes) - 1))],
        "channels": len(per_channel),
        "largest_channel_messages": max(per_channel.values()),
        "chatters": len(per_user),
        "chatters_per_channel_mean": round(len(per_user) / len(per_channel), 1),
        "messages_per_chatter_mean": round(len(lines) / len(per_user), 2),
        "messages_per_chatter_median": statistics.median(counts),
        "messages_per_chatter_max": counts[-1],
        "chatters_with_one_message": round(sum(1 for n in counts if n == 1) / len(counts), 3),
    }


# -- partition bounds (pure arithmetic) ------------------------------------------------------------


@dataclass(frozen=True)
class KeyChoice:
    """A partition key's time part: how long one partition covers, and how many a user-month reads."""

    name: str
    span_s: float
    """The longest time one partition covers."""
    month_reads: int
    """Partitions a calendar month (31 days at most) of one user touches."""


def month_parts(parts: int) -> KeyChoice:
    """The calendar month split into ``parts`` ranges of days (day-of-month - 1) * parts // 31: a month
    is exactly ``parts`` partition reads, the longest part covers ceil(31 / parts) days."""
    return KeyChoice(f"month/{parts}", math.ceil(MONTH_DAYS / parts) * 86_400.0, parts)


def fixed_window(name: str, span_s: float) -> KeyChoice:
    """Windows of ``span_s`` from the epoch. When they tile a UTC day, a 31-day month is exactly
    31 days' worth of them; otherwise (a week) a month may start mid-window: one more."""
    month_s = MONTH_DAYS * 86_400
    if 86_400 % span_s == 0:
        return KeyChoice(name, span_s, int(month_s // span_s))
    return KeyChoice(name, span_s, math.ceil(month_s / span_s) + 1)


USER_KEYS: Final = (
    month_parts(1),
    month_parts(2),
    month_parts(4),
    fixed_window("week", 7 * 86_400.0),
    fixed_window("day", 86_400.0),
    fixed_window("12h", 43_200.0),
    fixed_window("5min", 300.0),
)
CHANNEL_KEYS: Final = (
    fixed_window("day", 86_400.0),
    fixed_window("1h", 3_600.0),
    fixed_window("15min", 900.0),
    fixed_window("5min", 300.0),
)


def partition_mib(row_bytes: float, msgs_per_s: float, span_s: float) -> float:
    """The largest partition (MiB, uncompressed) of a key whose partitions cover ``span_s``, rows of
    ``row_bytes`` each arriving at ``msgs_per_s`` all the time."""
    return row_bytes * msgs_per_s * span_s / 2**20


def partition_bounds(
    row_bytes: float, msgs_per_s: float, keys: Sequence[KeyChoice], limit_mib: float = PARTITION_LIMIT_MIB
) -> list[dict[str, Any]]:
    """For each key choice: its largest partition at ``msgs_per_s`` and whether it stays under the limit."""
    out = []
    for key in keys:
        mib = partition_mib(row_bytes, msgs_per_s, key.span_s)
        out.append(
            {
                "key": key.name,
                "rows": round(msgs_per_s * key.span_s),
                "largest_mib": round(mib, 1),
                "within_limit": mib <= limit_mib,
                "user_month_reads": key.month_reads,
            }
        )
    return out


def coarsest_within(bounds: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The bound with the fewest user-month reads among those within the limit (None: none is)."""
    ok = [b for b in bounds if b["within_limit"]]
    return min(ok, key=lambda b: b["user_month_reads"]) if ok else None


def row_bytes_in_partition(data_bytes: int, rows: int, partitions: int, key_bytes: float) -> float:
    """Uncompressed bytes of one row inside a large partition, from an SSTable's uncompressed size:
    each partition's header (its key, a 2-byte length, ~14 bytes of deletion info and end marker) is
    taken out, the rest shared by the rows."""
    if rows <= 0:
        raise ValueError("no rows")
    return max(0.0, (data_bytes - partitions * (key_bytes + 16)) / rows)


# -- layouts ------------------------------------------------------------------------------------------

LZ4: Final = "{'class': 'LZ4Compressor'}"


def zstd(chunk_kb: int, level: int = 3) -> str:
    return f"{{'class': 'ZstdCompressor', 'chunk_length_in_kb': {chunk_kb}, 'compression_level': {level}}}"


@dataclass(frozen=True)
class Row:
    """One message's values that layouts take their rows from (all derived from the parsed event)."""

    event: Any  # schemas.chat_event.ChatEvent
    channel_id: str
    user_id: str
    sent_at: int
    message_id: str
    bucket: int
    period: int  # user month part: yyyymm * 10 + part (month/4)
    raw: str


def _month_part(sent_at_ms: int, parts: int = 4) -> int:
    t = time.gmtime(sent_at_ms // 1000)
    return (t.tm_year * 100 + t.tm_mon) * 10 + (t.tm_mday - 1) * parts // MONTH_DAYS


def strip_derivable(raw: str, message_id: str, sent_at: int) -> str:
    """``raw`` without the values of its ``id`` and ``tmi-sent-ts`` tags when they equal the row's
    ``message_id`` and ``sent_at`` (a reader puts them back); otherwise ``raw`` unchanged."""
    id_tag, ts_tag = f";id={message_id};", f";tmi-sent-ts={sent_at};"
    if raw.count(id_tag) != 1 or raw.count(ts_tag) != 1 or ";id=;" in raw or ";tmi-sent-ts=;" in raw:
        return raw
    return raw.replace(id_tag, ";id=;").replace(ts_tag, ";tmi-sent-ts=;")


@dataclass(frozen=True)
class Table:
    name: str
    ddl: str
    """``CREATE TABLE {ks}.<name> (...)``: ``{ks}`` is filled in."""
    columns: tuple[str, ...]
    values: Callable[[Row], tuple[Any, ...]]
    partition_key: Callable[[Row], tuple[Any, ...]]
    once_per_key: bool = False
    """An index table: one row per distinct partition key (the sink writes it once per key too)."""


@dataclass(frozen=True)
class Layout:
    name: str
    description: str
    tables: tuple[Table, ...]


def _msg_table(
    name: str, key: str, key_cols: tuple[str, ...], payload: str, compression: str, **kw: Any
) -> Table:
    id_type = kw.get("id_type", "text")
    key_types = {"channel_id": "text", "user_id": "text", "bucket": "timestamp", "period": "int"}
    cols = ", ".join(f"{c} {key_types[c]}" for c in key_cols)
    payload_cols = f", {payload} text" if payload else ""
    ddl = (
        f"CREATE TABLE {{ks}}.{name} ({cols}, sent_at timestamp, message_id {id_type}{payload_cols}, "
        f"PRIMARY KEY (({key}), sent_at, message_id)) WITH CLUSTERING ORDER BY (sent_at ASC, message_id ASC) "
        f"AND compression = {compression}"
    )
    as_id: Callable[[str], Any] = uuid.UUID if id_type == "uuid" else str
    strip = kw.get("strip", False)

    def values(r: Row) -> tuple[Any, ...]:
        keys = tuple(getattr(r, c) for c in key_cols)
        head = (*keys, r.sent_at, as_id(r.message_id))
        if not payload:
            return head
        return (*head, strip_derivable(r.raw, r.message_id, r.sent_at) if strip else r.raw)

    columns = (*key_cols, "sent_at", "message_id", *((payload,) if payload else ()))
    return Table(name, ddl, columns, values, lambda r: tuple(getattr(r, c) for c in key_cols))


def _id_keyed(name: str, description: str, compression: str, *, pointer: bool, **kw: Any) -> Layout:
    return Layout(
        name,
        description,
        (
            _msg_table(
                "chat_by_channel", "channel_id, bucket", ("channel_id", "bucket"), "raw", compression, **kw
            ),
            _msg_table(
                "chat_by_user",
                "channel_id, user_id, period",
                ("channel_id", "user_id", "period"),
                "" if pointer else "raw",
                compression,
                **kw,
            ),
        ),
    )


_LAYOUT_A_DDL: Final = {
    "messages_by_channel": (
        "CREATE TABLE IF NOT EXISTS {ks}.messages_by_channel ("
        "channel text, bucket timestamp, sent_at timestamp, message_id text, kind text, channel_id text, "
        "user_login text, user_id text, display_name text, text text, is_action boolean, "
        "received_at timestamp, tags frozen<map<text, text>>, raw text, ingester text, "
        "PRIMARY KEY ((channel, bucket), sent_at, message_id)"
        ") WITH CLUSTERING ORDER BY (sent_at ASC, message_id ASC) "
        "AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'DAYS', "
        "'compaction_window_size': 1}"
    ),
    "channel_buckets": (
        "CREATE TABLE IF NOT EXISTS {ks}.channel_buckets (channel text, bucket timestamp, "
        "PRIMARY KEY (channel, bucket)) WITH CLUSTERING ORDER BY (bucket ASC)"
    ),
    "messages_by_user": (
        "CREATE TABLE IF NOT EXISTS {ks}.messages_by_user ("
        "channel text, user_login text, bucket timestamp, sent_at timestamp, message_id text, kind text, "
        "channel_id text, user_id text, display_name text, text text, is_action boolean, "
        "received_at timestamp, tags frozen<map<text, text>>, raw text, ingester text, "
        "PRIMARY KEY ((channel, user_login, bucket), sent_at, message_id)"
        ") WITH CLUSTERING ORDER BY (sent_at ASC, message_id ASC) "
        "AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'DAYS', "
        "'compaction_window_size': 1}"
    ),
}
"""Layout A's tables: the chatlog schema before issue 17 (schemas/cassandra.cql up to commit cc25453), kept
here as they were measured (``{ks}`` is filled in; the table default compression, LZ4). The keyspace's
schema has the E64s tables since; these are only for the benchmark."""

_LAYOUT_A_KEYS: Final = {
    "messages_by_channel": ("channel", "bucket"),
    "channel_buckets": ("channel", "bucket"),
    "messages_by_user": ("channel", "user_login", "bucket"),
}


def _a_table(name: str) -> Table:
    """One table of layout A, written as the sink wrote it then: every column named like a chat event
    field takes that field (values as they are, ``None`` included), ``bucket`` is
    ``bucket_of(sent_at)``; the columns bound in the event's field order, ``bucket`` last."""
    from schemas.chat_event import FIELD_NAMES
    from schemas.cql import bucket_of

    ddl = _LAYOUT_A_DDL[name]
    present = set(_columns_of(ddl))
    fields = tuple(f for f in FIELD_NAMES if f in present and f != "bucket")
    columns = (*fields, "bucket")
    if set(columns) != present:
        raise ValueError(f"layout A, {name}: columns {sorted(present - set(columns))} are not event fields")
    key_at = [columns.index(c) for c in _LAYOUT_A_KEYS[name]]

    def values(r: Row) -> tuple[Any, ...]:
        return (*(getattr(r.event, f) for f in fields), bucket_of(r.event.sent_at))

    def key(r: Row) -> tuple[Any, ...]:
        v = values(r)
        return tuple(v[i] for i in key_at)

    return Table(name, ddl, columns, values, key, once_per_key=name == "channel_buckets")


def _layout_a() -> Layout:
    """Layout A: the tables before issue 17 (messages_by_channel, channel_buckets, messages_by_user) as
    they were (:data:`_LAYOUT_A_DDL`); "today" in its description is the day it was measured."""
    return Layout(
        "A",
        "today: two full rows (raw, tags map, parsed columns) + channel_buckets, LZ4",
        tuple(_a_table(name) for name in _LAYOUT_A_DDL),
    )


def _columns_of(ddl: str) -> list[str]:
    body = ddl[ddl.index("(") + 1 : ddl.index("PRIMARY KEY")]
    while "<" in body:  # frozen<map<text, text>>: its commas separate no columns
        body = re.sub(r"<[^<>]*>", "", body)
    return [part.split()[0] for part in body.split(",") if part.strip()]


def layouts() -> dict[str, Layout]:
    """Every candidate, by name."""
    all_ = [
        _layout_a(),
        _id_keyed("B", "raw line only in both tables, id keys, LZ4", LZ4, pointer=False),
        _id_keyed("C16", "B with Zstd (level 3), 16 KiB chunks", zstd(16), pointer=False),
        _id_keyed("C64", "B with Zstd (level 3), 64 KiB chunks", zstd(64), pointer=False),
        _id_keyed(
            "D16",
            "raw in the channel table, pointer rows in the user table, Zstd 16 KiB",
            zstd(16),
            pointer=True,
        ),
        _id_keyed(
            "D64",
            "raw in the channel table, pointer rows in the user table, Zstd 64 KiB",
            zstd(64),
            pointer=True,
        ),
        _id_keyed("E64", "D64 with message_id as uuid", zstd(64), pointer=True, id_type="uuid"),
        _id_keyed(
            "E64s",
            "E64, raw stored without the id and tmi-sent-ts values (restored from the key on read)",
            zstd(64),
            pointer=True,
            id_type="uuid",
            strip=True,
        ),
        _id_keyed("C64u", "C64 with message_id as uuid", zstd(64), pointer=False, id_type="uuid"),
    ]
    return {layout.name: layout for layout in all_}


DEFAULT_LAYOUTS: Final = ("A", "B", "C16", "C64", "D16", "D64", "E64", "E64s")
"""What `chatlog bench storage` measures unless told (C64u: C64 with uuid ids, on request)."""


_SENT_TS: Final = re.compile(r"[;@]tmi-sent-ts=(\d{13})[; ]")


def rows_of(lines: Sequence[str]) -> list[Row]:
    """Each line parsed as the sink would get it, with the id-keyed layouts' key values."""
    from core.irc_parse import parse_line
    from schemas.cql import bucket_of

    out = []
    for line in lines:
        sent = _SENT_TS.search(line)  # received 50 ms after it was sent, as an ingester would see it
        event = parse_line(line, received_at=int(sent.group(1)) + 50 if sent else T0_MS)
        if event is None or event.channel_id is None or event.user_id is None:
            raise ValueError(f"not a Twitch chat line with ids: {line[:80]!r}")
        out.append(
            Row(
                event,
                event.channel_id,
                event.user_id,
                event.sent_at,
                event.message_id,
                bucket_of(event.sent_at),
                _month_part(event.sent_at),
                event.raw,
            )
        )
    return out


# -- measuring -----------------------------------------------------------------------------------------


def cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of ``pid`` in seconds (None: no such process)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compression_info(path: Path) -> dict[str, Any]:
    """The header of a ``*-CompressionInfo.db``: compressor, chunk length, uncompressed data length."""
    blob = path.read_bytes()
    at = 0

    def utf() -> str:
        nonlocal at
        (size,) = struct.unpack_from(">H", blob, at)
        at += 2 + size
        return blob[at - size : at].decode()

    compressor = utf()
    (options,) = struct.unpack_from(">i", blob, at)
    at += 4
    opts = {}
    for _ in range(options):
        k = utf()
        opts[k] = utf()
    chunk, _max_compressed, data_length, chunks = struct.unpack_from(">iiqi", blob, at)
    if abs(chunks - math.ceil(data_length / chunk)) > 1:  # a flush may end with an empty chunk
        raise ValueError(f"{path.name}: {chunks} chunks of {chunk} for {data_length} bytes")
    return {"compressor": compressor, "chunk": chunk, "data_length": data_length}


def sstables(table_dir: Path) -> list[Path]:
    return sorted(table_dir.glob("*-Data.db"))


def table_dir(data_dir: Path, keyspace: str, table: str) -> Path | None:
    """The directory of ``keyspace.table`` in Cassandra's ``data_dir`` (None before its first flush)."""
    found = sorted((data_dir / keyspace).glob(f"{table}-*"))
    return found[0] if found else None


_MAJOR_COMPACTION: Final = (
    "{'class': 'SizeTieredCompactionStrategy', 'min_threshold': 2, 'max_threshold': 64, "
    "'bucket_low': 0.001, 'bucket_high': 1000}"
)
"""Size-tiered compaction whose one bucket takes every SSTable of the table, two at least: a major
compaction without nodetool."""


def _wait_flushed(layout: Layout, keyspace: str, data_dir: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        dirs = [table_dir(data_dir, keyspace, t.name) for t in layout.tables]
        if all(d is not None and sstables(d) for d in dirs):
            return
        time.sleep(0.5)
    raise ChatlogError(f"{keyspace}: the tables were not flushed in time")


def _flush_and_compact(
    session: Any,
    keyspace: str,
    layout: Layout,
    data_dir: Path,
    timeout_s: float,
    again: Sequence[tuple[Any, tuple[Any, ...]]],
) -> float:
    """Flush every table of ``layout`` and compact each to one SSTable; returns the seconds it took."""
    t0 = time.monotonic()
    for table in layout.tables:
        session.execute(
            f"ALTER TABLE {keyspace}.{table.name} WITH compaction = {_MAJOR_COMPACTION}", timeout=120
        )
        session.execute(
            f"ALTER TABLE {keyspace}.{table.name} WITH memtable_flush_period_in_ms = 1000", timeout=120
        )
    _wait_flushed(layout, keyspace, data_dir, t0 + timeout_s)
    # Flushes write LZ4 whatever the table's compressor (cassandra.yaml flush_compression: fast), so a
    # table that flushed once would keep an LZ4 SSTable: one row written again (the same cells, so
    # nothing more once compacted) makes a second SSTable, and the compaction writes the table's own.
    for prepared, params in again:
        session.execute(prepared, params, timeout=60)
    names = [table.name for table in layout.tables]
    return wait_compacted(
        session, keyspace, lambda: [table_files(data_dir, keyspace, n) for n in names], t0, timeout_s
    )


def table_files(data_dir: Path, keyspace: str, table: str) -> tuple[str, ...]:
    """The names of the files of ``keyspace.table`` in Cassandra's ``data_dir`` (none yet: empty)."""
    d = table_dir(data_dir, keyspace, table)
    return tuple(sorted(p.name for p in d.iterdir())) if d is not None and d.exists() else ()


def wait_compacted(
    session: Any, keyspace: str, files: Callable[[], list[tuple[str, ...]]], t0: float, timeout_s: float
) -> float:
    """Wait until each table's ``files()`` hold one SSTable, nothing temporary, unchanged for 3 s, and no
    compaction of ``keyspace`` runs; returns the seconds since ``t0`` (ChatlogError at ``timeout_s``)."""
    stable_since, last = time.monotonic(), None
    while time.monotonic() - t0 < timeout_s:
        state = files()
        single = all(sum(1 for f in names if f.endswith("-Data.db")) == 1 for names in state)
        busy = any("tmp" in f for names in state for f in names)
        if state != last:
            stable_since, last = time.monotonic(), state
        elif (
            single
            and not busy
            and time.monotonic() - stable_since > 3.0
            and not compacting(session, keyspace)
        ):
            return time.monotonic() - t0
        time.sleep(0.5)
    raise ChatlogError(f"{keyspace}: the tables did not compact to one SSTable each in {timeout_s:.0f} s")


def compacting(session: Any, keyspace: str) -> bool:
    """Whether Cassandra runs an SSTable task (a compaction) in ``keyspace``."""
    try:
        rows = session.execute("SELECT keyspace_name FROM system_views.sstable_tasks", timeout=30)
    except Exception:
        return False
    return any(r.keyspace_name == keyspace for r in rows)


def _key_bytes(values: Sequence[tuple[Any, ...]]) -> float:
    """Mean serialized size of partition keys (text: UTF-8; numbers and timestamps: 4-8 bytes; a
    composite key adds 3 bytes per component)."""

    def size(v: Any) -> int:
        if isinstance(v, str):
            return len(v.encode())
        return 8 if isinstance(v, int) and abs(v) >= 2**31 else 4

    keys = set(values)
    per = [sum(size(v) for v in k) + (3 * len(k) if len(k) > 1 else 0) for k in keys]
    return statistics.fmean(per) if per else 0.0


def measure_layout(
    session: Any,
    layout: Layout,
    keyspace: str,
    rows: Sequence[Row],
    *,
    data_dir: Path,
    cassandra_pid: int | None,
    concurrency: int,
    compact_timeout_s: float,
) -> dict[str, Any]:
    """Write ``rows`` into ``layout`` in ``keyspace`` (created here), flush, compact and measure."""
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent

    session.execute(
        f"CREATE KEYSPACE {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=120,
    )
    stmts: list[tuple[Any, tuple[Any, ...]]] = []
    again: list[tuple[Any, tuple[Any, ...]]] = []
    per_table: dict[str, dict[str, Any]] = {}
    for table in layout.tables:
        session.execute(table.ddl.replace("{ks}", keyspace), timeout=120)
        prepared = session.prepare(
            f"INSERT INTO {keyspace}.{table.name} ({', '.join(table.columns)}) "
            f"VALUES ({', '.join('?' for _ in table.columns)})"
        )
        prepared.consistency_level = ConsistencyLevel.ONE
        keys = [table.partition_key(r) for r in rows]
        params = [table.values(r) for r in rows]
        if table.once_per_key:
            seen: dict[tuple[Any, ...], tuple[Any, ...]] = {}
            for k, p in zip(keys, params, strict=True):
                seen.setdefault(k, p)
            params = list(seen.values())
        stmts.extend((prepared, p) for p in params)
        again.append((prepared, params[-1]))
        per_table[table.name] = {
            "rows": len(params),
            "partitions": len(set(keys)),
            "key_bytes": _key_bytes(keys),
        }
    cpu0, t0 = cpu_seconds(cassandra_pid), time.perf_counter()
    results = execute_concurrent(session, stmts, concurrency=concurrency, raise_on_first_error=True)
    wall = time.perf_counter() - t0
    cpu1 = cpu_seconds(cassandra_pid)
    if not all(r.success for r in results):
        raise ChatlogError(f"layout {layout.name}: some writes failed")
    compact_s = _flush_and_compact(session, keyspace, layout, data_dir, compact_timeout_s, again)
    cpu2 = cpu_seconds(cassandra_pid)
    n = len(rows)
    on_disk = uncompressed = 0
    for table in layout.tables:
        d = table_dir(data_dir, keyspace, table.name)
        assert d is not None
        data = sstables(d)
        size = sum(p.stat().st_size for p in data)
        infos = [
            compression_info(p.with_name(p.name.replace("-Data.db", "-CompressionInfo.db"))) for p in data
        ]
        raw_len = sum(i["data_length"] for i in infos)
        stats = per_table[table.name]
        stats.update(
            {
                "sstables": len(data),
                "compressor": sorted({i["compressor"] for i in infos}),
                "chunk_bytes": sorted({i["chunk"] for i in infos}),
                "data_db_bytes": size,
                "uncompressed_bytes": raw_len,
                "compression_ratio": round(size / raw_len, 3) if raw_len else None,
                "bytes_per_message": round(size / n, 1),
                "uncompressed_bytes_per_row": round(raw_len / stats["rows"], 1),
                "row_bytes_in_large_partition": round(
                    row_bytes_in_partition(raw_len, stats["rows"], stats["partitions"], stats["key_bytes"]), 1
                ),
                "rows_per_partition": round(stats["rows"] / stats["partitions"], 2),
                "key_bytes": round(stats["key_bytes"], 1),
            }
        )
        on_disk += size
        uncompressed += raw_len
    return {
        "layout": layout.name,
        "description": layout.description,
        "tables": per_table,
        "rows_written": len(stmts),
        "data_db_bytes": on_disk,
        "bytes_per_message": round(on_disk / n, 1),
        "uncompressed_bytes_per_message": round(uncompressed / n, 1),
        "write_s": round(wall, 2),
        "rows_per_s": round(len(stmts) / wall),
        "messages_per_s": round(n / wall),
        "cassandra_cpu_us_per_message_write": None
        if cpu0 is None or cpu1 is None
        else round((cpu1 - cpu0) / n * 1e6, 1),
        "cassandra_cpu_us_per_message_flush_compact": None
        if cpu1 is None or cpu2 is None
        else round((cpu2 - cpu1) / n * 1e6, 1),
        "flush_compact_s": round(compact_s, 1),
    }


def bounds_of(result: dict[str, Any]) -> dict[str, Any]:
    """The partition-bound arithmetic for a measured layout: each table's row size inside a large
    partition, at the moderator limit (user tables) and at 300 msg/s (channel tables)."""
    out: dict[str, Any] = {}
    for name, table in result["tables"].items():
        row = table["row_bytes_in_large_partition"]
        if "user" in name:
            bounds = partition_bounds(row, MODERATOR_MSGS_PER_S, USER_KEYS)
            rate = MODERATOR_MSGS_PER_S
        elif name == "channel_buckets":
            continue
        else:
            bounds = partition_bounds(row, CHANNEL_MSGS_PER_S, CHANNEL_KEYS)
            rate = CHANNEL_MSGS_PER_S
        best = coarsest_within(bounds)
        out[name] = {
            "row_bytes": row,
            "msgs_per_s": round(rate, 3),
            "keys": bounds,
            "coarsest_within_limit": best["key"] if best else None,
        }
    return out


@contextmanager
def _session(settings: StackSettings) -> Iterator[Any]:
    from core.cql import connect, connect_failure, quiet_driver_logs

    quiet_driver_logs()
    try:
        cluster, session = connect(settings, timeout=120)
    except Exception as exc:
        raise ChatlogError(connect_failure(settings, exc)) from None
    try:
        yield session
    finally:
        cluster.shutdown()


def run(
    settings: StackSettings,
    *,
    messages: int,
    days: float,
    names: Sequence[str],
    out: Path,
    concurrency: int = 64,
    compact_timeout_s: float = 300.0,
) -> dict[str, Any]:
    """Measure each layout of ``names`` on the local stack; writes ``out`` (JSON) and a PNG next to it."""
    from bench.scratch import scratch_keyspaces
    from chatlog.results import write_json
    from chatlog.stack.process import read_pid

    candidates = layouts()
    unknown = [n for n in names if n not in candidates]
    if unknown:
        raise ChatlogError(f"unknown layout(s) {', '.join(unknown)}: choose from {', '.join(candidates)}")
    data_dir = settings.state_dir / "cassandra" / "data"
    if not data_dir.is_dir():
        raise ChatlogError(
            f"no local Cassandra data directory at {data_dir}: start the stack (`chatlog stack up`)"
        )
    pid = read_pid(settings.state_dir / "run" / "cassandra.pid")
    lines = corpus(messages, days=days)
    stats = corpus_stats(lines)
    rows = rows_of(lines)
    run_id = uuid.uuid4().hex[:6]
    results = []
    with _session(settings) as session:
        for name in names:
            keyspace = f"bst{run_id}_{name.lower()}"
            with scratch_keyspaces(settings, keyspace):
                measured = measure_layout(
                    session,
                    candidates[name],
                    keyspace,
                    rows,
                    data_dir=data_dir,
                    cassandra_pid=pid,
                    concurrency=concurrency,
                    compact_timeout_s=compact_timeout_s,
                )
            measured["ratio_to_raw"] = round(measured["bytes_per_message"] / stats["raw_bytes_mean"], 3)
            measured["partition_bounds"] = bounds_of(measured)
            results.append(measured)
    result = {
        "corpus": stats,
        "days": days,
        "anchor": {
            "justlog_bytes_per_message": JUSTLOG_BYTES_PER_MESSAGE,
            "goal_ratio": JUSTLOG_RATIO,
            "goal_bytes_per_message_for_this_corpus": round(JUSTLOG_RATIO * stats["raw_bytes_mean"], 1),
        },
        "limits": {
            "partition_mib": PARTITION_LIMIT_MIB,
            "moderator_msgs_per_s": round(MODERATOR_MSGS_PER_S, 3),
            "channel_msgs_per_s": CHANNEL_MSGS_PER_S,
        },
        "cassandra_pid_found": pid is not None,
        "concurrency": concurrency,
        "layouts": results,
    }
    write_json(out, result)
    _plot(result, out.with_suffix(".png"))
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    from chatlog.results import figure

    layouts_ = result["layouts"]
    names = [r["layout"] for r in layouts_]
    with figure(path, 1, 3, figsize=(15, 4.5)) as (_fig, (ax1, ax2, ax3)):
        ax1.bar(names, [r["bytes_per_message"] for r in layouts_], color="tab:blue")
        goal = result["anchor"]["goal_bytes_per_message_for_this_corpus"]
        ax1.axhline(goal, color="tab:red", linestyle="--", label=f"goal 0.42x raw ({goal:g} B)")
        ax1.axhline(result["corpus"]["raw_bytes_mean"], color="grey", linestyle=":", label="raw line")
        ax1.set_title("bytes on disk per message (all tables)")
        ax1.legend()
        ax2.bar(names, [r["rows_per_s"] for r in layouts_], color="tab:green")
        ax2.set_title("rows/s written (one client)")
        cpu = [r["cassandra_cpu_us_per_message_write"] or 0 for r in layouts_]
        cpu_c = [r["cassandra_cpu_us_per_message_flush_compact"] or 0 for r in layouts_]
        ax3.bar(names, cpu, label="writes", color="tab:orange")
        ax3.bar(names, cpu_c, bottom=cpu, label="flush + compaction", color="tab:purple")
        ax3.set_title("Cassandra CPU µs per message")
        ax3.legend()
        for ax in (ax1, ax2, ax3):
            ax.tick_params(axis="x", rotation=45)


def summary(result: dict[str, Any]) -> str:
    """The table of numbers, one layout a line."""
    c = result["corpus"]
    lines = [
        f"corpus: {c['messages']} lines, raw mean {c['raw_bytes_mean']} B, {c['channels']} channels, "
        f"{c['chatters']} chatters ({c['messages_per_chatter_mean']} msgs each on average, median "
        f"{c['messages_per_chatter_median']}); goal "
        f"{result['anchor']['goal_bytes_per_message_for_this_corpus']} B/message (0.42x)",
        f"{'layout':>6} {'B/msg':>7} {'ratio':>6} {'uncompr':>8} {'rows/s':>7} {'cpu w':>6} {'cpu fc':>6}  "
        "user-key within 100 MiB (reads/month)",
    ]
    for r in result["layouts"]:
        user = [(t, b) for t, b in r["partition_bounds"].items() if "user" in t]
        best = user[0][1]["coarsest_within_limit"] if user else None
        reads = next((k["user_month_reads"] for t, b in user for k in b["keys"] if k["key"] == best), None)
        lines.append(
            f"{r['layout']:>6} {r['bytes_per_message']:>7} {r['ratio_to_raw']:>6} "
            f"{r['uncompressed_bytes_per_message']:>8} {r['rows_per_s']:>7} "
            f"{r['cassandra_cpu_us_per_message_write']!s:>6} "
            f"{r['cassandra_cpu_us_per_message_flush_compact']!s:>6}  "
            f"{best} ({reads})"
        )
    return "\n".join(lines)
