"""The realistic Twitch corpus of the benchmarks and tests: PRIVMSG lines with full tags (badges, colours,
emotes, client nonces, replies with their parent tags, ``/me``, non-Latin text) of chatters who keep their
name, id, colour and badges, in channels of Zipf-like sizes (:func:`corpus`).

It was written for issue 17's study of candidate storage layouts (``chatlog bench storage``, retired with
layout 1); the corpus stayed: :mod:`lab.bench.justlog_tree` builds ``chatlog bench vs-justlog``'s data set
from its chatters and lines, and unit tests parse and store its lines.
"""

from __future__ import annotations

import itertools
import random
import statistics
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

SEED: Final = 20261117
T0_MS: Final = 1_793_491_200_000
"""2026-11-01T00:00:00Z: the corpus starts at a month's first instant."""

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
