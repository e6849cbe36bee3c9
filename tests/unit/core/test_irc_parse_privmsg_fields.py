"""core/irc_parse.privmsg_fields: a chat message's raw line, tags, channel, sender, text and ``/me`` flag
without the rest of the parse, equal to parse_line's event's for every line it answers (real Twitch lines,
the benchmark corpus, generated hostile ones, edge cases), and ``None`` wherever parse_line would not make
a PRIVMSG event of the line or it cannot be sure."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.irc_parse import PrivmsgFields, line_tags, privmsg_fields, privmsg_parts
from core.testing import chat_events
from lab.bench.storage import corpus
from tests.irc_strategies import TAG_VALUE
from tests.peer_lines import PEER_LINES, peer_lines
from tests.unit.core.parsed_privmsg import NOW, parsed_privmsg


def _parsed(line: str) -> PrivmsgFields | None:
    """parse_line's event's fields for a PRIVMSG; None for another command or a line that does not parse."""
    event = parsed_privmsg(line)
    if event is None:
        return None
    return event.raw, event.tags, event.channel, event.user_login, event.text, event.is_action


def _agrees(line: str) -> bool:
    """privmsg_fields holds back or gives parse_line's fields (tags in the same order); True when it
    answered."""
    quick = privmsg_fields(line)
    if quick is not None:
        parsed = _parsed(line)
        assert quick == parsed, repr(line)
        assert parsed is not None and list(quick[1].items()) == list(parsed[1].items()), repr(line)
        assert list(line_tags(line).items()) == list(quick[1].items()), repr(line)  # a packed month's way
    return quick is not None


def test_every_real_twitch_line_agrees_and_every_chat_message_takes_the_short_way() -> None:
    lines = [d["raw"] for d in peer_lines()]
    if not lines:
        pytest.skip(f"{PEER_LINES} is not here")
    answered = {line for line in lines if _agrees(line)}
    privmsgs = {line for line in lines if _parsed(line) is not None}
    assert len(privmsgs) > 20
    assert answered == privmsgs  # none of them has a login tag: every one is read the short way


def test_every_corpus_line_agrees_and_takes_the_short_way() -> None:
    lines = corpus(3000)
    assert sum(_agrees(line) for line in lines) == len(lines)
    assert sum("\\" in line.split(" ", 1)[0] for line in lines) > 100  # escaped tag values among them


def test_every_line_chatlog_writes_agrees() -> None:
    events = [
        e for ids in (True, False) for e in chat_events(300, channels=3, now_ms=NOW - 86_400_000, ids=ids)
    ]
    answered = sum(_agrees(e.raw) for e in events)
    assert answered == sum(e.kind == "PRIVMSG" for e in events) > 400


def test_a_plain_message() -> None:
    line = r"@a=1;display-name=B\so\:b;id=x :Bob!b@h PRIVMSG #Chan :\x01ACTION waves\x01"
    line = line.replace(r"\x01", "\x01")
    assert privmsg_fields(line) == (
        line,
        {"a": "1", "display-name": "B o;b", "id": "x"},
        "chan",
        "bob",
        "waves",
        True,
    )
    assert privmsg_fields(":bob!b@h PRIVMSG #c :hi\r") == (
        ":bob!b@h PRIVMSG #c :hi",
        {},
        "c",
        "bob",
        "hi",
        False,
    )
    assert privmsg_fields("@ :bob!b@h PRIVMSG #c") == ("@ :bob!b@h PRIVMSG #c", {}, "c", "bob", None, False)
    assert privmsg_fields("@a :b PRIVMSG #c :") == ("@a :b PRIVMSG #c :", {"a": ""}, "c", "b", "", False)


@pytest.mark.parametrize(
    "line",
    [
        "@login=alice :bob!b@h PRIVMSG #c :the login tag names the sender",
        "@a=1;login=alice :bob!b@h PRIVMSG #c :x",
        f"@id={'x' * 129} :bob!b@h PRIVMSG #c :an id over its bound",
        f"@msgid={'x' * 129} :bob!b@h PRIVMSG #c :a msgid over its bound",
        f"@user-id={'1' * 65} :bob!b@h PRIVMSG #c :a user id over its bound",
        f"@room-id={'1' * 65} :bob!b@h PRIVMSG #c :a room id over its bound",
        ":bob!b@h privmsg #c :lower-case command",
        ":bob!b@h PRIVMSG #c text without a colon",
        "PRIVMSG #c :no prefix",
        ":bob!b@h USERNOTICE #c :not a message",
        "@only-tags",
        "",
        f":bob!b@h PRIVMSG #c :{'x' * 17_000}",
    ],
)
def test_lines_it_leaves_to_the_parser(line: str) -> None:
    assert privmsg_fields(line) is None


def test_ids_at_their_bounds_are_read_the_short_way() -> None:
    line = f"@id={'x' * 128};room-id={'1' * 64};user-id={'2' * 64} :bob!b@h PRIVMSG #c :x"
    assert _agrees(line)
    # an empty login tag is no sender (parse_line reads the prefix), and privmsg_parts holds back anyway
    assert (
        _agrees("@login= :bob!b@h PRIVMSG #c :x") and privmsg_parts("@login= :bob!b@h PRIVMSG #c :x") is None
    )


_KEYS = st.sampled_from(
    ["id", "msgid", "login", "display-name", "room-id", "user-id", "tmi-sent-ts", "emotes", "a", "", "İ"]
)
_TAG = st.one_of(
    st.tuples(_KEYS, TAG_VALUE).map("=".join),
    _KEYS,  # a tag without `=`
    st.sampled_from([f"id={'7' * 129}", f"user-id={'7' * 65}", f"room-id={'7' * 64}"]),
)
_TAGS = st.one_of(st.just(""), st.lists(_TAG, max_size=6).map(lambda tags: "@" + ";".join(tags)))
_SPACES = st.sampled_from([" ", " ", "  "])
_PREFIX = st.sampled_from(
    [":bob!b@h", ":Bob!b@h.x", ":İnci!i@h", ":irc.example.org", ":bob", ":", "", f":{'n' * 201}!n@h"]
)
_COMMAND = st.sampled_from(["PRIVMSG", "PRIVMSG", "privmsg", "USERNOTICE", "CLEARCHAT"])
_CHANNEL = st.sampled_from(["#c", "#Chan", "#İ", "#", "c", f"#{'c' * 200}", f"#{'c' * 201}"])
_TEXT = st.one_of(
    st.none(),
    st.lists(
        st.sampled_from(["\x01ACTION", "\x01", " ", ":", "text", "é", "\r", "\u202e", "\\s", "😀"]),
        max_size=6,
    ).map(lambda parts: " :" + "".join(parts)),
)


@settings(max_examples=600, deadline=None)
@given(_TAGS, _SPACES, _PREFIX, _SPACES, _COMMAND, _CHANNEL, _TEXT, st.sampled_from(["", "\r"]))
@example("@a=1", " ", ":bob!b@h", " ", "PRIVMSG", "#c", " :\x01ACTION \x01", "\r")
@example("@display-name=\\s;login=", "  ", ":b", "  ", "PRIVMSG", "#c", None, "")
def test_generated_lines_agree_or_hold_back(
    tags: str, gap: str, prefix: str, gap2: str, command: str, channel: str, text: str | None, end: str
) -> None:
    head = f"{tags}{gap}" if tags else ""
    line = f"{head}{prefix}{gap2 if prefix else ''}{command} {channel}{text or ''}{end}"
    _agrees(line)
