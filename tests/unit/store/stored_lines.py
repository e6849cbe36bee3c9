"""Chat events and the lines the writers store for them, for the read side's tests: the real Twitch lines of
``shared/testdata`` and every kind chatlog's tests write (:func:`every_event`), each with its stored line as
the writer frames it (:func:`store.blocks.framed`), read back plain (:func:`stored_lines`) or from the v4
frames of the blocks it is written in (:func:`framed_lines`, as :mod:`store.read` makes its lines)."""

from __future__ import annotations

from collections.abc import Sequence

from core.irc_parse import MalformedLine, parse_line
from core.testing import chat_events
from schemas.chat_event import ChatEvent
from store import frame
from store.blocks import framed
from store.keys import uuid_text
from store.line import LogLine
from tests.peer_lines import peer_lines

NOW = 1_900_000_000_000  # a receive time after every real line's tmi-sent-ts
T = 1_795_273_445_000


def stored_row(event: ChatEvent) -> tuple[str, str, int, int]:
    """The (stored line, message id, sent_at, received_at) the writer frames for ``event``: the id is the
    text of the message's uuid, as a reader has it from the frame (:meth:`store.frame.Frame.rest`)."""
    sent_at, mid, stored, received_at, _split, _who = framed(event).line
    assert received_at is not None
    return stored, uuid_text(mid), sent_at, received_at


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
    """Each event with a line of its stored row given plain (its stored line, id and times)."""
    return [(event, LogLine(*stored_row(event), event.channel)) for event in events]


def framed_lines(
    events: Sequence[ChatEvent], *, per_frame: int = 50, hint: str = "hint"
) -> list[tuple[ChatEvent, LogLine]]:
    """Each event with the line a reader makes of it from a v4 frame: the events framed as the writer
    frames them, ``per_frame`` lines to a frame in line order, each line given as its frame and index
    (its id, stored line and receive time read from the frame when asked), ``hint`` the channel read."""
    pairs = sorted(((framed(event), event) for event in events), key=lambda pair: pair[0].order)
    out = []
    for start in range(0, len(pairs), per_frame):
        run = pairs[start : start + per_frame]
        decoded = frame.decode(frame.encode([item.line for item, _ in run]))
        for i, (_, event) in enumerate(run):
            line = LogLine(
                "", "", decoded.sents[i], None, hint, decoded.chats[i], decoded.actions[i], None, decoded, i
            )
            out.append((event, line))
    return out


def every_event() -> list[ChatEvent]:
    """The real Twitch lines' events and every kind chatlog's tests write, with and without ids."""
    written = [e for ids in (True, False) for e in chat_events(300, channels=3, now_ms=T, ids=ids)]
    return [e for _, e in events_of_peer_lines(NOW)] + written
