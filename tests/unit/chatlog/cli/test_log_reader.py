"""`chatlog logs --format text` cannot be driven by chat: control characters come out as visible escapes."""

from __future__ import annotations

import pytest

from chatlog.cli.log_reader import format_text
from schemas.chat_event import ChatEvent
from serve.terminal import escape_controls

HEAD = "[2026-11-21 15:04:05] #chan"


def _event(**kw: object) -> ChatEvent:
    base: dict[str, object] = {
        "message_id": "m", "kind": "PRIVMSG", "channel": "chan", "user_login": "alice", "text": "hi",
        "sent_at": 1_795_273_445_000, "received_at": 1_795_273_445_000, "raw": "r",
    }  # fmt: skip
    base.update(kw)
    return ChatEvent(**base)  # type: ignore[arg-type]


def test_a_line_is_the_time_the_channel_the_sender_and_the_text() -> None:
    assert format_text(_event()) == f"{HEAD} alice: hi"
    assert (
        format_text(_event(kind="CLEARCHAT", user_login=None, text="baduser")) == f"{HEAD} CLEARCHAT: baduser"
    )
    assert format_text(_event(kind="CLEARCHAT", user_login=None, text=None)) == f"{HEAD} CLEARCHAT"


def _is_inert(line: str) -> bool:
    """No character that moves the cursor, starts an escape sequence or ends the line."""
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029\u202e" for c in line)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("fine\r[2026-01-01 00:00:00] #chan admin: fake", "fine\\r[2026-01-01 00:00:00] #chan admin: fake"),
        ("a\n[2026-11-21 15:04:06] #chan mod: fake line", "a\\n[2026-11-21 15:04:06] #chan mod: fake line"),
        ("\x1b[2J\x1b[H\x1b]0;pwned\x07", "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07"),
        ("c1 \x9b31m csi", "c1 \\x9b31m csi"),
        ("nul\x00 del\x7f tab\t", "nul\\x00 del\\x7f tab\\t"),
        ("sep\u2028par\u2029", "sep\\u2028par\\u2029"),
        ("\u202egnp.exe", "\\u202egnp.exe"),
    ],
)
def test_control_characters_in_the_text_are_shown_escaped(text: str, shown: str) -> None:
    line = format_text(_event(text=text))
    assert line == f"{HEAD} alice: {shown}"
    assert _is_inert(line)


def test_names_channels_and_kinds_are_escaped_too() -> None:
    line = format_text(
        _event(user_login=None, display_name="evil\rroot", channel="c\x1b[31m", kind="NOTICE\n")
    )
    assert line == "[2026-11-21 15:04:05] #c\\x1b[31m NOTICE\\n evil\\rroot: hi"
    assert _is_inert(line)


def test_ordinary_text_is_untouched() -> None:
    text = "héllo 😂 \u200dzwj 日本語 ¯\\_(ツ)_/¯ \\n typed"
    assert format_text(_event(text=text)) == f"{HEAD} alice: {text}"
    assert escape_controls(text) is text  # no copy on the usual path
    assert format_text(_event(is_action=True)) == f"{HEAD} alice: /me hi"


def test_every_c0_and_c1_control_is_escaped() -> None:
    controls = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
    assert _is_inert(escape_controls(controls))
    assert escape_controls(controls).count("\\") == len(controls)


def test_gaps_are_marked_where_they_fall_forwards_and_backwards() -> None:
    from chatlog.cli.log_reader import interleave_gaps
    from core.coverage_spans import Gap, gap_line

    early, middle, late = Gap(5, 8, "a"), Gap(20, 30, "b"), Gap(50, 60, "c")
    lines = [(10, "l10"), (20, "l20"), (40, "l40")]
    marks = {gap_line(g): n for g, n in ((early, "E"), (middle, "M"), (late, "L"))}
    forward = [marks.get(x, x) for x in interleave_gaps(lines, [late, early, middle])]
    assert forward == ["E", "l10", "M", "l20", "l40", "L"]
    backward = [marks.get(x, x) for x in interleave_gaps(lines[::-1], [early, late, middle], reverse=True)]
    assert backward == ["L", "l40", "l20", "M", "l10", "E"]
    cut = [marks.get(x, x) for x in interleave_gaps(lines[:2], [early, middle, late], trailing=False)]
    assert cut == ["E", "l10", "M", "l20"]  # a limit cut the lines: no mark past the last one shown
