"""IRCv3 tag parsing and unescaping: every escape, the edge cases, and the fast path against a reference."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

from core.irc_parse import parse_line, unescape_tag_value
from core.irc_tags import parse_tags, plain_json, plain_json_many, plain_tags, tags_json


@pytest.mark.parametrize(
    ("escaped", "value"),
    [
        ("", ""),
        ("plain", "plain"),
        (r"a\sb", "a b"),
        (r"a\:b", "a;b"),
        (r"a\\b", "a\\b"),
        (r"a\rb", "a\rb"),
        (r"a\nb", "a\nb"),
        (r"\s\s", "  "),
        (r"\\s", "\\s"),  # an escaped backslash followed by a plain s
        (r"\\\s", "\\ "),
        ("trailing\\", "trailing"),  # a lone trailing backslash is dropped
        ("\\", ""),
        (r"\\\\", "\\\\"),
        (r"a\bb\xc", "abbxc"),  # unknown escapes stand for the character itself
        (r"\😀", "😀"),
        (r"ronni\shas\ssubscribed\sfor\s6\smonths!", "ronni has subscribed for 6 months!"),
    ],
)
def test_unescape_tag_value(escaped: str, value: str) -> None:
    assert unescape_tag_value(escaped) == value


def test_unescape_returns_the_same_object_without_backslash() -> None:
    value = "no escapes here"
    assert unescape_tag_value(value) is value


@pytest.mark.parametrize(
    ("section", "tags"),
    [
        ("a=1;b=2", {"a": "1", "b": "2"}),
        ("flag", {"flag": ""}),  # a tag without '='
        ("a;b=;c=x", {"a": "", "b": "", "c": "x"}),
        ("a=1;a=2", {"a": "2"}),  # the last value wins
        ("a=1;;b=2;", {"a": "1", "b": "2"}),  # empty items are ignored
        ("=v;a=1", {"a": "1"}),  # an empty key is ignored
        ("", {}),
        ("a=b=c", {"a": "b=c"}),  # '=' in a value is not escaped
        ('a="quoted";b=x', {"a": '"quoted"', "b": "x"}),
        ('a=x","b":"y', {"a": 'x","b":"y'}),  # would be valid-but-wrong JSON: must not be taken as such
        ("a=tab\there;b=1", {"a": "tab\there", "b": "1"}),
        ("a=nul\x00;b=del\x7f", {"a": "nul\x00", "b": "del\x7f"}),
        ("a=\\u0041", {"a": "u0041"}),  # not a JSON escape
        ("a=\\\\n", {"a": "\\n"}),
        ("+draft/reply=abc;+example=a\\sb", {"+draft/reply": "abc", "+example": "a b"}),
        ("vendor.example/key=été;k2=日本", {"vendor.example/key": "été", "k2": "日本"}),
        ("a=\ud800", {"a": "\ud800"}),  # a lone surrogate (from a surrogateescape decode) is kept
    ],
)
def test_parse_tags(section: str, tags: dict[str, str]) -> None:
    assert parse_tags(section) == tags


def _reference(section: str) -> dict[str, str]:
    """The spec, written plainly and independently (character by character)."""
    tags: dict[str, str] = {}
    for item in section.split(";"):
        if not item:
            continue
        key, _, escaped = item.partition("=")
        out, i = [], 0
        while i < len(escaped):
            char = escaped[i]
            if char == "\\":
                if i + 1 < len(escaped):
                    nxt = escaped[i + 1]
                    out.append({"s": " ", ":": ";", "\\": "\\", "r": "\r", "n": "\n"}.get(nxt, nxt))
                i += 2
            else:
                out.append(char)
                i += 1
        if key:
            tags[key] = "".join(out)
    return tags


def _same_as_the_reference(section: str) -> None:
    tags = parse_tags(section)
    assert list(tags.items()) == list(_reference(section).items()), section  # the order too: json shows it


def test_parse_tags_matches_the_reference_on_random_sections() -> None:
    rng = random.Random(7)
    alphabet = 'abk-/+.=;\\s:nr",{}é😀\t1'
    for _ in range(5000):
        _same_as_the_reference("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))))


def test_parse_tags_matches_the_reference_on_random_well_formed_sections_with_escapes() -> None:
    """Sections of ``key=value`` items (what the fast path takes), values holding escapes of every kind,
    keys repeated, a few without ``=`` or with an empty key."""
    rng = random.Random(11)
    pieces = [
        "x",
        "1",
        "\\s",
        "\\:",
        "\\\\",
        "\\r",
        "\\n",
        "\\t",
        "\\u0041",
        "\\",
        "é",
        "😀",
        "=",
        "\x01",
        "/",
    ]
    for _ in range(5000):
        items = []
        for _ in range(rng.randint(0, 6)):
            key = rng.choice(["a", "b", "id", "k\\s", "", "reply-parent-msg-body"])
            value = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
            items.append(key if rng.random() < 0.05 else f"{key}={value}")
        _same_as_the_reference(";".join(items))


def test_tags_in_a_line_are_unescaped_everywhere() -> None:
    line = r"@a=x\sy;b=1\:2;c=back\\slash;d=cr\rlf\n;e;f= :n!u@h PRIVMSG #c :x"
    event = parse_line(line, received_at=1)
    assert event is not None
    assert event.tags == {"a": "x y", "b": "1;2", "c": "back\\slash", "d": "cr\rlf\n", "e": "", "f": ""}


# -- plain sections: their JSON by replaces ----------------------------------------------------------------


def _plain_is_exact(section: str) -> bool:
    """Assert what :func:`plain_tags` promises wherever it holds; whether it did."""
    if not plain_tags(section):
        return False
    made = tags_json(section)
    assert made is not None
    assert made == msgspec.json.encode(parse_tags(section)), section  # byte for byte, key order kept
    assert list(json.loads(made).items()) == list(_reference(section).items()), section
    tags = _reference(section)
    assert plain_json(section) == (made, tags.get("display-name"), tags.get("id")), section
    return True


@pytest.mark.parametrize(
    ("section", "plain"),
    [
        ("badge-info=;badges=moderator/1;display-name=Ab;id=1-2;user-id=5", True),
        (r"reply-parent-msg-body=so\sEZ\stoday;id=x", True),  # a reply's escaped spaces
        ("a=1", True),
        ("vendor.example/key=été;k2=日本", True),
        ("a=1;a=2", False),  # a key twice: the dict keeps one
        ("=v;a=1", False),  # an empty key is left out
        ("a;b=1", False),  # a tag without =
        ("a=b=c", False),  # a value holding =
        ('a="q"', False),
        (r"a=b\:c", False),  # an escape but \s
        (r"a=b\\sc", False),
        ("a=\x01", False),  # JSON escapes it
        ("a=\ud800", False),  # does not encode
        (r"k\s=1", False),  # a key is not unescaped
        ("", False),
    ],
)
def test_a_plain_section_is_its_json_by_replaces(section: str, plain: bool) -> None:
    assert _plain_is_exact(section) is plain


def test_plain_sections_are_exact_on_random_sections() -> None:
    rng = random.Random(13)
    keys = ["a", "b", "id", "display-name", "k\\s", "", "reply-parent-msg-body"]
    pieces = ["x", "1", "\\s", "\\:", "\\\\", "\\", "é", "😀", "=", "\x01", '"', "/", " "]
    plain = 0
    for _ in range(5000):
        items = []
        for _ in range(rng.randint(0, 6)):
            value = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
            key = rng.choice(keys)
            items.append(key if rng.random() < 0.05 else f"{key}={value}")
        plain += _plain_is_exact(";".join(items))
    assert plain > 200  # the test reaches plain sections (259 of this seed), not only refusals


def _sections(seed: int, count: int) -> list[str]:
    """Random tag sections: mostly plain ones (Twitch's), now and then one of a kind :func:`plain_tags`
    refuses."""
    rng = random.Random(seed)
    plain_keys, plain_pieces = (
        ["a", "id", "display-name", "reply-parent-msg-body"],
        ["x", "1", "\\s", "é", "😀"],
    )
    other_keys = [*plain_keys, "k\\s", ""]
    other_pieces = [*plain_pieces, "\\:", "\\", "=", "\x01", '"', " ", "\n", "\ud800"]
    out = []
    for _ in range(count):
        keys, pieces = (plain_keys, plain_pieces) if rng.random() < 0.9 else (other_keys, other_pieces)
        items = {
            f"{rng.choice(keys)}={''.join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))}"
            for _ in range(3)
        }
        out.append(";".join(sorted(items)))
    return out


def test_sections_made_at_once_are_each_made_alone() -> None:
    twitch = "badge-info=;badges=moderator/1;display-name=Ab;id=1-2;reply-parent-msg-body=so\\sEZ;user-id=5"
    runs = [
        [twitch] * 5,
        [twitch, "display-name=X;a=1", "id=9"],
        *(_sections(seed, 6) for seed in range(300)),
    ]
    whole = 0
    for sections in runs:
        one_by_one = [plain_json(section) for section in sections]
        assert plain_json_many(sections) == one_by_one, sections
        whole += None not in one_by_one
    assert 2 < whole < len(runs)  # runs made at once and runs that fell back, both seen
