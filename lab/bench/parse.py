"""``chatlog bench parse``: parser throughput on a fixed corpus of Twitch lines, ours against ``irc``'s.

The corpus is generated from a seeded ``random.Random``, so every run and every machine parses the same
lines: ~85 % PRIVMSG (with badges, emotes, some ``/me`` and non-Latin text), USERNOTICE (sub, resub,
raid, with ``\\s``-escaped ``system-msg``), CLEARCHAT (timeout, ban, chat cleared), CLEARMSG, NOTICE,
and ~2 % lines that are not chat (ROOMSTATE, USERSTATE, PING, JOIN) as a real connection has them.

Measured, best of ``repeat`` runs over ``lines`` lines (the corpus cycled), as lines per second of
this process's CPU time (``time.process_time``), so that other work on a shared machine does not count
against the parser; the wall-clock rates of the same runs are reported next to them:

* ``parse``: :func:`core.irc_parse.parse_line`;
* ``parse_encode``: that plus :func:`schemas.chat_event.encode` (what an ingester does per line);
* ``irc_framing``: the per-line work of ``irc.client.ServerConnection._process_line`` (the
  ``_rfc_1459_command_regexp`` match, ``NickMask``, ``Command.lookup``, ``Arguments.from_group``,
  ``Tag.from_group``), which yields no chat event yet;
* ``irc_event``: a parser built on those ``irc`` pieces that returns the same ChatEvent as ours.
"""

from __future__ import annotations

import os
import platform
import random
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from irc import client, events, message

from core.irc_parse import CHAT_COMMANDS, line_hash, parse_line
from lab import extras
from lab.results import figure, write_json
from schemas.chat_event import ChatEvent, encode

SEED: Final = 20261121
CORPUS_SIZE: Final = 20_000
_T0: Final = 1_795_000_000_000  # epoch ms of the first line

_WORD_TEXT = (
    "Kappa Keepo PogChamp LUL monkaS OMEGALUL KEKW Pog 5Head gg wp nice clip that play was insane "
    "what is this song chat is so fast today lets go pepeLaugh catJAM Clap first time here hello "
    "when stream ends can we get a W in the chat modCheck copium forsenE EZ nerd ratio true based"
)
_WORDS = tuple(_WORD_TEXT.split())
_UNICODE = (
    "こんにちは世界",
    "你好\uff0c直播间",  # fullwidth comma
    "안녕하세요 여러분",
    "مرحبا بالجميع",
    "שלום לכולם",
    "Привет чат",
    "😂😂😂",
    "🔥 let's go 🔥",
    "zero\u200bwidth\u200djoiner",
    "Ꮚ˘ ꈊ ˘ Ꮚ",
    "ﾟ∀ﾟ)ｱﾋｬ",
    "Ünïcödé çäñ bé fün",
)
_BADGES = ("", "subscriber/12", "subscriber/3,premium/1", "moderator/1,subscriber/24", "vip/1", "turbo/1")
_COLORS = ("", "#FF0000", "#1E90FF", "#9ACD32", "#FF69B4", "#DAA520", "#8A2BE2")


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _line(rng: random.Random, index: int, channels: Sequence[tuple[str, int]], users: Sequence[str]) -> str:
    channel, room_id = rng.choice(channels)
    login = rng.choice(users)
    user_id = str(10_000_000 + (zlib.crc32(login.encode()) % 90_000_000))
    display = login.capitalize() if rng.random() < 0.8 else login.upper()
    ts = str(_T0 + index * 37 + rng.randint(0, 36))
    roll = rng.random()
    if roll < 0.85:
        text = _words(rng, 1, 18)
        if rng.random() < 0.12:
            text = rng.choice(_UNICODE) + " " + text
        emotes = "25:0-4,12-16/1902:6-10" if text.startswith("Kappa") else ""
        if rng.random() < 0.03:
            text = f"\x01ACTION {text}\x01"
        badges = rng.choice(_BADGES)
        tags = (
            f"badge-info={'subscriber/' + str(rng.randint(1, 60)) if 'subscriber' in badges else ''};"
            f"badges={badges};client-nonce={rng.getrandbits(128):032x};color={rng.choice(_COLORS)};"
            f"display-name={display};emotes={emotes};first-msg=0;flags=;id={_uuid(rng)};"
            f"mod={int('moderator' in badges)};returning-chatter=0;room-id={room_id};"
            f"subscriber={int('subscriber' in badges)};tmi-sent-ts={ts};turbo=0;user-id={user_id};user-type="
        )
        return f"@{tags} :{login}!{login}@{login}.tmi.twitch.tv PRIVMSG #{channel} :{text}"
    if roll < 0.90:
        kind = rng.choice(("sub", "resub", "raid"))
        if kind == "raid":
            viewers = rng.randint(2, 30_000)
            extra = (
                f"msg-param-displayName={display};msg-param-login={login};"
                f"msg-param-profileImageURL=https://static-cdn.jtvnw.net/jtv_user_pictures/{login}-profile_image-70x70.png;"
                f"msg-param-viewerCount={viewers};system-msg={viewers}\\sraiders\\sfrom\\s{display}\\shave\\sjoined!"
            )
            trailing = ""
        else:
            months = rng.randint(1, 80)
            extra = (
                f"msg-param-cumulative-months={months};msg-param-should-share-streak=0;"
                f"msg-param-sub-plan-name=Channel\\sSubscription\\s({channel});msg-param-sub-plan=Prime;"
                f"system-msg={display}\\ssubscribed\\swith\\sPrime.\\sThey've\\ssubscribed\\sfor\\s{months}\\smonths!"
            )
            trailing = f" :{_words(rng, 2, 10)}" if kind == "resub" else ""
        tags = (
            f"badge-info=;badges=;color={rng.choice(_COLORS)};display-name={display};emotes=;flags=;"
            f"id={_uuid(rng)};login={login};mod=0;msg-id={kind};{extra};room-id={room_id};subscriber=1;"
            f"tmi-sent-ts={ts};user-id={user_id};user-type="
        )
        return f"@{tags} :tmi.twitch.tv USERNOTICE #{channel}{trailing}"
    if roll < 0.94:
        target_id = str(20_000_000 + rng.randint(0, 99_999))
        which = rng.random()
        if which < 0.6:
            return (
                f"@ban-duration={rng.choice((1, 10, 60, 600, 86400))};room-id={room_id};"
                f"target-user-id={target_id};tmi-sent-ts={ts} :tmi.twitch.tv CLEARCHAT #{channel} :{login}"
            )
        if which < 0.95:
            return (
                f"@room-id={room_id};target-user-id={target_id};tmi-sent-ts={ts} "
                f":tmi.twitch.tv CLEARCHAT #{channel} :{login}"
            )
        return f"@room-id={room_id};tmi-sent-ts={ts} :tmi.twitch.tv CLEARCHAT #{channel}"
    if roll < 0.97:
        return (
            f"@login={login};room-id=;target-msg-id={_uuid(rng)};tmi-sent-ts={ts} "
            f":tmi.twitch.tv CLEARMSG #{channel} :{_words(rng, 1, 8)}"
        )
    if roll < 0.98:
        notice = rng.choice(
            (
                ("slow_on", "This room is now in slow mode. You may send messages every 30 seconds."),
                ("emote_only_on", "This room is now in emote-only mode."),
                ("followers_off", "This room is no longer in followers-only mode."),
            )
        )
        return f"@msg-id={notice[0]} :tmi.twitch.tv NOTICE #{channel} :{notice[1]}"
    return rng.choice(
        (
            f"@emote-only=0;followers-only=-1;r9k=0;room-id={room_id};slow=0;subs-only=0 "
            f":tmi.twitch.tv ROOMSTATE #{channel}",
            f"@badge-info=;badges=;color=;display-name=justinfan123;emote-sets=0;mod=0;subscriber=0;"
            f"user-type= :tmi.twitch.tv USERSTATE #{channel}",
            "PING :tmi.twitch.tv",
            f":justinfan123!justinfan123@justinfan123.tmi.twitch.tv JOIN #{channel}",
        )
    )


def corpus(size: int = CORPUS_SIZE, seed: int = SEED) -> list[str]:
    """``size`` realistic Twitch lines, the same for a given seed on every machine and Python."""
    rng = random.Random(seed)
    users = [f"{rng.choice(_WORDS).lower()}_{rng.randint(0, 99999)}" for _ in range(2000)]
    channels = [(f"{rng.choice(_WORDS).lower()}{i}", 30_000_000 + i * 31) for i in range(300)]
    return [_line(rng, i, channels, users) for i in range(size)]


# -- the same parser, built on the `irc` package -------------------------------------------------


def irc_framing(line: str) -> tuple[Any, ...]:
    """What ``irc.client.ServerConnection._process_line`` computes for one line (no event yet)."""
    grp = client._rfc_1459_command_regexp.match(line).group
    source = client.NickMask.from_group(grp("prefix"))
    command = events.Command.lookup(grp("command"))
    arguments = message.Arguments.from_group(grp("argument"))
    tags = message.Tag.from_group(grp("tags"))
    return source, command, arguments, tags


def irc_parse_line(line: str, *, received_at: int, ingester: str | None = None) -> ChatEvent | None:
    """Our contract on top of ``irc``'s framing (no malformed-line checks: it is a speed reference)."""
    source, command, arguments, tag_list = irc_framing(line)
    kind = command.upper()
    if kind not in CHAT_COMMANDS or not arguments or not arguments[0].startswith("#"):
        return None
    tags = {t["key"]: t["value"] or "" for t in tag_list or ()}
    text = arguments[-1] if len(arguments) > 1 else None
    is_action = False
    if text is not None and text.startswith("\x01ACTION"):
        is_action, text = True, text[7:].strip("\x01").removeprefix(" ")
    stamp = tags.get("tmi-sent-ts")
    login = tags.get("login") or (source.nick.lower() if source and source.userhost else None)
    return ChatEvent(
        message_id=tags.get("id") or tags.get("msgid") or line_hash(line),
        kind=kind,
        channel=arguments[0][1:].lower(),
        channel_id=tags.get("room-id") or None,
        user_login=login,
        user_id=tags.get("user-id") or None,
        display_name=tags.get("display-name") or None,
        text=text,
        is_action=is_action,
        sent_at=int(stamp) if stamp else received_at,
        received_at=received_at,
        tags=tags,
        raw=line,
        ingester=ingester,
    )


# -- measuring ---------------------------------------------------------------------------------


def _rate(
    step: Callable[[str], object], lines: Sequence[str], total: int, repeat: int
) -> tuple[float, float]:
    """Best (CPU-time, wall-clock) lines/s of ``repeat`` runs of ``step`` over ``total`` lines."""
    rounds, tail = divmod(total, len(lines))
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(rounds):
            for line in lines:
                step(line)
        for line in lines[:tail]:
            step(line)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return total / best_cpu, total / best_wall


def run(
    lines: int = 500_000, repeat: int = 3, out: Path | None = Path("results/bench_parse.json")
) -> dict[str, Any]:
    """Measure, write ``out`` (unless None) and return the result."""
    if out is not None:
        extras.require_plotting()
    data = corpus()
    events = [parse_line(line, received_at=_T0) for line in data]
    chat = [e for e in events if e is not None]
    same = sum(
        1 for line, ev in zip(data, events, strict=True) if irc_parse_line(line, received_at=_T0) == ev
    )

    def ours(line: str) -> object:
        return parse_line(line, received_at=_T0, ingester="bench")

    def ours_encoded(line: str) -> object:
        event = parse_line(line, received_at=_T0, ingester="bench")
        return encode(event) if event is not None else None

    def theirs(line: str) -> object:
        return irc_parse_line(line, received_at=_T0, ingester="bench")

    load_before = os.getloadavg()[0]
    measured = {
        "parse": _rate(ours, data, lines, repeat),
        "parse_encode": _rate(ours_encoded, data, lines, repeat),
        "irc_framing": _rate(irc_framing, data, lines, repeat),
        "irc_event": _rate(theirs, data, lines, repeat),
    }
    rates = {k: cpu for k, (cpu, _) in measured.items()}
    result: dict[str, Any] = {
        "lines_per_s": {k: round(v) for k, v in rates.items()},
        "us_per_line": {k: round(1e6 / v, 3) for k, v in rates.items()},
        "wall_lines_per_s": {k: round(wall) for k, (_, wall) in measured.items()},
        "clock": "lines_per_s and us_per_line use process CPU time; wall_lines_per_s the wall clock",
        "goal_lines_per_s": 200_000,
        "lines_measured": lines,
        "repeat": repeat,
        "corpus": {
            "size": len(data),
            "seed": SEED,
            "bytes": sum(len(x.encode()) for x in data),
            "chat_events": len(chat),
            "by_kind": {k: sum(1 for e in chat if e.kind == k) for k in sorted(CHAT_COMMANDS)},
            "actions": sum(1 for e in chat if e.is_action),
            "mean_json_bytes": round(sum(len(encode(e)) for e in chat) / len(chat)),
            "irc_event_equal_to_ours": same,
        },
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # before, after
        },
    }
    if out is not None:
        write_json(out, result)
        _plot(result, out.with_suffix(".png"))
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    """A small bar chart of the rates against the goal."""
    rates = result["lines_per_s"]
    with figure(path, figsize=(6, 2.8), dpi=100) as (_fig, ax):
        ax.barh(list(rates), [v / 1000 for v in rates.values()], color=["#2a7", "#2a7", "#999", "#999"])
        ax.axvline(result["goal_lines_per_s"] / 1000, color="#c33", linestyle="--", label="goal")
        ax.invert_yaxis()
        ax.set_xlabel(f"thousand lines per CPU-second (one process, best of {result['repeat']})")
        ax.set_title(
            f"IRC line parsing, Python {result['python']}, {result['machine']['cpu_count']} CPUs", fontsize=9
        )
        ax.legend(loc="lower right", fontsize=8)
