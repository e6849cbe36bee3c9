"""The benchmarks' Twitch corpus (lab.bench.storage): realistic, the same for a seed, every line a chat
line."""

from __future__ import annotations

import itertools
import re

import pytest

from core.irc_parse import parse_line
from lab.bench.storage import T0_MS, corpus, corpus_stats
from schemas.chat_event import ChatEvent

_SENT_TS = re.compile(r"[;@]tmi-sent-ts=(\d{13})[; ]")


def _parsed(line: str) -> ChatEvent:
    """``line`` as an ingester gets it, 50 ms after it was sent."""
    sent = _SENT_TS.search(line)
    assert sent is not None, line[:80]
    event = parse_line(line, received_at=int(sent.group(1)) + 50)
    assert event is not None, line[:80]
    return event


def test_corpus_is_realistic_twitch_chat() -> None:
    lines = corpus(20_000)
    stats = corpus_stats(lines)
    assert 470 <= stats["raw_bytes_mean"] <= 540
    assert stats["channels"] == 3
    assert stats["messages_per_chatter_median"] <= 3 < stats["messages_per_chatter_mean"] < 12
    assert stats["messages_per_chatter_max"] > 100  # a few chatters say much
    assert 0.15 < stats["chatters_with_one_message"] < 0.6
    for tag in ("badge-info=", "badges=", "color=", "display-name=", "emotes=", "first-msg=", "flags=", "id=",
                "mod=", "returning-chatter=", "room-id=", "subscriber=", "tmi-sent-ts=", "turbo=", "user-id=",
                "user-type="):  # fmt: skip
        assert all(f";{tag}" in line or line.startswith(f"@{tag}") for line in lines[:500]), tag
    assert sum("client-nonce=" in line for line in lines) > 0.8 * len(lines)
    assert sum("reply-parent-msg-id=" in line for line in lines) > 0.05 * len(lines)
    events = [_parsed(line) for line in lines]
    assert all(e.kind == "PRIVMSG" and e.bad_sent_ts is None for e in events)
    assert all(e.channel_id and e.user_id for e in events)  # Twitch ids on every line
    sent = [e.sent_at for e in events]
    assert sent[0] >= T0_MS and sent[-1] < T0_MS + 86_400_000 + 1000  # one day, in time order (1 s jitter)
    assert max(a - b for a, b in itertools.pairwise(sent)) < 1000


def test_corpus_is_the_same_for_a_seed_and_differs_across_seeds() -> None:
    assert corpus(500) == corpus(500)
    assert corpus(500) != corpus(500, seed=1)
    with pytest.raises(ValueError, match="positive"):
        corpus(0)
