"""core/irc_parse.privmsg_parts: a chat message's channel, sender and text without its tags parsed, equal to
parse_line's for every line that parses (real Twitch lines, generated hostile ones, edge cases), and
``None`` wherever it cannot be sure."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.irc_parse import privmsg_parts
from core.testing import chat_events
from tests.peer_lines import PEER_LINES, peer_lines
from tests.unit.core.parsed_privmsg import NOW, parsed_privmsg


def _parsed(line: str) -> tuple[str, str | None, str | None] | None:
    """What parse_line gives for a PRIVMSG; None for another command or a line that does not parse."""
    event = parsed_privmsg(line)
    return None if event is None else (event.channel, event.user_login, event.text)


def _agrees(line: str) -> bool:
    """privmsg_parts holds back or gives parse_line's fields; True when it answered."""
    quick = privmsg_parts(line)
    if quick is not None:
        assert quick == _parsed(line), repr(line)
    return quick is not None


def test_every_real_twitch_line_agrees_and_plain_messages_take_the_short_way() -> None:
    lines = [d["raw"] for d in peer_lines()]
    if not lines:
        pytest.skip(f"{PEER_LINES} is not here")
    answered = [line for line in lines if _agrees(line)]
    privmsgs = [line for line in lines if _parsed(line) is not None]
    assert len(privmsgs) > 20
    # every real chat message without a `login` tag is read the short way
    assert {line for line in privmsgs if ";login=" not in line.split(" ", 1)[0]} <= set(answered)


def test_every_line_chatlog_writes_agrees() -> None:
    events = chat_events(300, channels=3, now_ms=NOW - 86_400_000, ids=True)
    answered = sum(_agrees(e.raw) for e in events)
    assert answered == sum(e.kind == "PRIVMSG" for e in events) > 100


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (":Bob!bob@bob.tmi.twitch.tv PRIVMSG #Chan :hi there", ("chan", "bob", "hi there")),
        ("@a=1 :bob!b@h PRIVMSG #c :\x01ACTION waves\x01", ("c", "bob", "waves")),
        (":bob!b@h PRIVMSG #c :\x01ACTION\x01", ("c", "bob", "")),
        (":bob!b@h PRIVMSG #c :\x01ACTIONwaves\x01", ("c", "bob", "\x01ACTIONwaves\x01")),
        (":bob!b@h PRIVMSG #c :", ("c", "bob", "")),
        (":bob!b@h PRIVMSG #c :a :b\r", ("c", "bob", "a :b")),
        (":irc.example.org PRIVMSG #c :from a server", ("c", None, "from a server")),
        (":bob@host PRIVMSG #c :no user part", ("c", "bob", "no user part")),
        ("@reply-parent-user-login=x :bob!b@h PRIVMSG #c :re", ("c", "bob", "re")),
    ],
)
def test_plain_messages(line: str, expected: tuple[str, str | None, str]) -> None:
    assert privmsg_parts(line) == expected == _parsed(line)


@pytest.mark.parametrize(
    "line",
    [
        "@login=alice :bob!b@h PRIVMSG #c :the login tag names the sender",
        "@a=1;login=alice :bob!b@h PRIVMSG #c :x",
        ":bob!b@h privmsg #c :lower-case command",
        ":bob!b@h PRIVMSG #c text without a colon",
        ":bob!b@h PRIVMSG  #c :two spaces",
        "PRIVMSG #c :no prefix",
        ":bob!b@h PRIVMSG c :no hash",
        ":bob!b@h PRIVMSG # :empty channel",
        ":bob!b@h USERNOTICE #c :not a message",
        ":bob!b@h PRIVMSG",
        "@only-tags",
        "",
        f":{'n' * 201}!b@h PRIVMSG #c :a nick over the bound",
        f":bob!b@h PRIVMSG #{'c' * 201} :a channel over the bound",
        f":bob!b@h PRIVMSG #c :{'x' * 17_000}",
    ],
)
def test_lines_it_leaves_to_the_parser(line: str) -> None:
    assert privmsg_parts(line) is None


_PIECES = st.sampled_from(
    ["@", "a=1", ";", "login", "=", " ", ":", "bob", "!", "@", "h.x", "PRIVMSG", "privmsg", "#", "#c", "İ",
     "\x01ACTION", "\x01", "\r", "text", "é", "\u202e"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
@example("@a=1 :bob!b@h PRIVMSG #İ :x")
@example(":bob!b@h PRIVMSG #c :\x01ACTION \x01\r")
def test_generated_lines_agree_or_hold_back(line: str) -> None:
    _agrees(line)
