"""Chat events and the lines the sink stores for them, for the read side's tests: the real Twitch lines of
``shared/testdata`` and every kind chatlog's tests write (:func:`every_event`), each with its stored row."""

from __future__ import annotations

import uuid

from schemas.cql import message_uuid

from core.irc_parse import MalformedLine, parse_line
from core.testing import chat_events
from schemas.chat_event import ChatEvent
from store.line import LogLine
from store.stored_line import strip
from tests.peer_lines import peer_lines

NOW = 1_900_000_000_000  # a receive time after every real line's tmi-sent-ts
T = 1_795_273_445_000


def stored_row(event: ChatEvent) -> tuple[str, uuid.UUID, int, int]:
    """The (line, message_id, sent_at, received_at) the sink stores for ``event`` (sink/writer/rows.py)."""
    key = message_uuid(event.message_id)
    return strip(event.raw, key, event.sent_at), key, event.sent_at, event.received_at


def events_of_peer_lines(received_at: int) -> list[tuple[str, ChatEvent]]:
    out = []
    for item in peer_lines():
        try:
            event = parse_line(item["raw"], received_at=received_at, ingester="r1")
        except MalformedLine:
            continue
        if event is not None:
            out.append((item["source"], event))
    return out


def stored_lines(events: list[ChatEvent]) -> list[tuple[ChatEvent, LogLine]]:
    return [(event, LogLine(*stored_row(event), event.channel)) for event in events]


def every_event() -> list[ChatEvent]:
    """The real Twitch lines' events and every kind chatlog's tests write, with and without ids."""
    written = [e for ids in (True, False) for e in chat_events(300, channels=3, now_ms=T, ids=ids)]
    return [e for _, e in events_of_peer_lines(NOW)] + written
