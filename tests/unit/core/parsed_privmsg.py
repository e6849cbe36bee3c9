"""The oracle of the tests of parse_line's PRIVMSG shortcuts (``privmsg_parts``, ``privmsg_fields``):
parse_line's own event of a chat message."""

from __future__ import annotations

from core.irc_parse import MalformedLine, parse_line
from schemas.chat_event import ChatEvent

NOW = 1_900_000_000_000
"""When the lines are received."""


def parsed_privmsg(line: str) -> ChatEvent | None:
    """parse_line's event of a PRIVMSG; None for another command or a line that does not parse."""
    try:
        event = parse_line(line, received_at=NOW)
    except MalformedLine:
        return None
    return event if event is not None and event.kind == "PRIVMSG" else None
