"""Property-style: every event parsed from many generated lines survives JSON and schema validation."""

from __future__ import annotations

import random

from core.irc_parse import CHAT_COMMANDS, MalformedLine, line_hash, parse_line
from lab.bench.parse import corpus
from schemas.chat_event import ChatEvent, decode, encode

_KEYS = (
    "id",
    "msgid",
    "room-id",
    "user-id",
    "display-name",
    "login",
    "badges",
    "emotes",
    "system-msg",
    "+c/x",
)
_CHARS = "aZ09 ;:=\\@#!,.-_/\x01\t\"'{}[]é日本語😀\u200b\u202e\u2028\x7f"
_COMMANDS = (*sorted(CHAT_COMMANDS), "privmsg", "Notice", "PING", "JOIN", "ROOMSTATE", "001", "TAGMSG")


def _text(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(low, high)))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\:").replace(" ", "\\s")


def _random_line(rng: random.Random) -> str:
    parts = []
    if rng.random() < 0.8:
        tags = [f"{k}={_escape(_text(rng, 0, 12))}" for k in rng.sample(_KEYS, rng.randint(0, len(_KEYS)))]
        if rng.random() < 0.5:
            tags.append(f"tmi-sent-ts={rng.randint(0, 2_000_000_000_000)}")
        elif rng.random() < 0.3:
            tags.append(
                f"time=20{rng.randint(10, 39)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T12:34:56.789Z"
            )
        rng.shuffle(tags)
        parts.append("@" + ";".join(tags))
    prefix = rng.choice(("", ":tmi.twitch.tv", ":Nick!user@host", ":bare", ":n@h"))
    if prefix:
        parts.append(prefix)
    parts.append(rng.choice(_COMMANDS))
    parts.append(rng.choice(("#chan", "#Ünï", "#日本", "*", "nick", "#")))
    if rng.random() < 0.9:
        text = _text(rng, 0, 60)
        if rng.random() < 0.2:
            text = f"\x01ACTION {text}\x01"
        parts.append(":" + text)
    line = " ".join(parts)
    return line + "\r" if rng.random() < 0.1 else line


def _check(line: str, event: ChatEvent) -> None:
    assert decode(encode(event)) == event, line
    assert event.raw == line.removesuffix("\r")
    assert event.kind in CHAT_COMMANDS
    assert event.channel and event.channel == event.channel.lower() and not event.channel.startswith("#")
    expected_id = event.tags.get("id") or event.tags.get("msgid") or line_hash(event.raw)
    assert event.message_id == expected_id
    if "tmi-sent-ts" not in event.tags and "time" not in event.tags:
        assert event.sent_at == event.received_at


def test_generated_lines_round_trip_through_json() -> None:
    rng = random.Random(20261121)
    outcomes = {"event": 0, "none": 0, "malformed": 0}
    for _ in range(20_000):
        line = _random_line(rng)
        try:
            event = parse_line(line, received_at=1_700_000_000_000, ingester=rng.choice((None, "w-1")))
        except MalformedLine as exc:
            assert str(exc) and "\n" not in str(exc)
            outcomes["malformed"] += 1
            continue
        if event is None:
            outcomes["none"] += 1
            continue
        outcomes["event"] += 1
        _check(line, event)
    assert min(outcomes.values()) > 1000, outcomes  # every path was exercised


def test_bench_corpus_round_trips_and_is_deterministic() -> None:
    lines = corpus(5000)
    assert lines == corpus(5000)
    events = [parse_line(line, received_at=1, ingester="w") for line in lines]
    parsed = [(line, e) for line, e in zip(lines, events, strict=True) if e is not None]
    assert len(parsed) > 4800
    for line, event in parsed:
        _check(line, event)
    kinds = {e.kind for _, e in parsed}
    assert kinds == CHAT_COMMANDS
    assert any(e.is_action for _, e in parsed)
