"""IRCv3 message tags: the tag section of a line into a ``dict[str, str]``, values unescaped.

Escapes (https://ircv3.net/specs/extensions/message-tags): ``\\:`` is ``;``, ``\\s`` a space, ``\\\\`` a
backslash, ``\\r`` CR, ``\\n`` LF; any other escaped character stands for itself (``\\x`` is ``x``) and a
lone trailing backslash is dropped. A tag without ``=`` and a tag with an empty value both map to ``""``
(the spec makes them equivalent). When a key repeats, the last value wins. Empty keys (``;;``) are
ignored.

Speed: a Twitch PRIVMSG carries ~17 tags, so this is half the work of parsing a line. The fast path
turns the section into a JSON object with two C-level ``bytes.replace`` calls and lets msgspec build the
dict, which is faster than the plain split/partition loop below (``chatlog bench parse`` measures whole
lines, tags included). It is taken only when it cannot be wrong: no ``"`` and no backslash in the
section (so the JSON text has no escapes and no way to close a string early). Anything the JSON text
then gets wrong makes it invalid, never different: a value holding ``=`` or a tag without ``=`` yields
``"k":"v":"w"`` or ``"k","j":"v"``, a control character is rejected by msgspec; those go to the loop
below.
"""

from __future__ import annotations

from typing import Final

import msgspec

_ESCAPES: Final[dict[str, str]] = {"s": " ", ":": ";", "\\": "\\", "r": "\r", "n": "\n"}
_as_json_object = msgspec.json.Decoder(dict[str, str]).decode
_as_json = msgspec.json.Encoder().encode


def unescape_tag_value(value: str) -> str:
    """Undo the IRCv3 tag-value escaping (see the module doc for the rules)."""
    if "\\" not in value:
        return value
    if "\\\\" not in value:  # each backslash starts an escape: the usual ones (a reply's spaces) by replaces
        plain = value.replace("\\s", " ").replace("\\:", ";")
        if "\\" not in plain:
            return plain
    out: list[str] = []
    start = 0
    end = len(value)
    while True:
        bs = value.find("\\", start)
        if bs < 0:
            out.append(value[start:])
            break
        out.append(value[start:bs])
        if bs + 1 < end:  # a lone backslash at the very end is dropped
            char = value[bs + 1]
            out.append(_ESCAPES.get(char, char))
        start = bs + 2
        if start >= end:
            break
    return "".join(out)


def parse_tags(section: str) -> dict[str, str]:
    """The tags of ``section`` (the text between ``@`` and the first space), unescaped."""
    if '"' not in section and "\\" not in section:
        try:
            # on bytes: replacing is ~a third cheaper there than on str, and msgspec reads UTF-8 either way
            tags = _as_json_object(
                b'{"' + section.encode().replace(b"=", b'":"').replace(b";", b'","') + b'"}'
            )
        except (msgspec.DecodeError, UnicodeEncodeError):  # UnicodeEncodeError: lone surrogates
            pass
        else:
            if "" in tags:  # only possible through `=v` (an empty key): same as the loop
                del tags[""]
            return tags
    return _parse_tags_slow(section)


def _parse_tags_slow(section: str) -> dict[str, str]:
    tags: dict[str, str] = {}
    for item in section.split(";"):
        key, _, value = item.partition("=")
        if key:
            tags[key] = unescape_tag_value(value) if "\\" in value else value
    return tags


# -- a plain section: its tags' JSON made by replaces, once known to be exact -----------------------------


def tags_json(section: str) -> bytes | None:
    """The JSON object text that the section's tags are when the section is plain (:func:`plain_tags`), made
    by replaces alone: ``\\s`` as a space, each ``=`` and ``;`` as a string's end and start. None for a
    section with ``"``, with any other backslash, or that does not encode. Whether the section is plain is
    not checked here: a caller that knows it (a packed month records it per row) uses this without looking
    again."""
    if '"' in section:
        return None
    try:
        raw = section.encode()
    except UnicodeEncodeError:
        return None
    if b"\\" in raw:
        raw = raw.replace(b"\\s", b" ")
        if b"\\" in raw:
            return None
    return b'{"' + raw.replace(b"=", b'":"').replace(b";", b'","') + b'"}'


def plain_tags(section: str) -> bool:
    """Whether :func:`tags_json` of ``section`` is exactly the JSON of :func:`parse_tags`'s dict (msgspec's
    encoding, key order kept): every element a key, ``=`` and a value without ``=``, no key twice or empty,
    no escape but ``\\s``, no character JSON escapes. Twitch's tag sections are (a reply's quoted body
    included)."""
    made = tags_json(section)
    return made is not None and made == _as_json(parse_tags(section))


class _Shown(msgspec.Struct):
    """The tags a json answer shows outside ``tags`` (the others are skipped, not made into strings)."""

    display_name: str | None = msgspec.field(name="display-name", default=None)
    id: str | None = None


_shown: Final = msgspec.json.Decoder(_Shown).decode

PlainTags = tuple[bytes, str | None, str | None]
"""A plain tag section's JSON text and its ``display-name`` and ``id`` values (None without one)."""


def plain_json(section: str) -> PlainTags | None:
    """:func:`tags_json` of a plain ``section`` (:func:`plain_tags`) with its ``display-name`` and ``id``
    values (None without one); None where that text is not JSON at all (a section that is not plain)."""
    made = tags_json(section)
    if made is None:
        return None
    try:
        shown = _shown(made)
    except msgspec.DecodeError:
        return None
    return made, shown.display_name, shown.id


_shown_many: Final = msgspec.json.Decoder(list[_Shown]).decode


def plain_json_many(sections: list[str]) -> list[PlainTags | None]:
    """:func:`plain_json` of each of ``sections`` (each non-empty), made at once: the sections joined by line
    ends, their replaces done once over the whole, and their ``display-name`` and ``id`` values decoded in
    one call (a json answer's block of chat messages: a third of the cost of one call per section). Where
    any section is not plain (a ``"``, another escape than ``\\s``, a line end, text that does not encode or
    decode), each is made on its own."""
    joined = "\n".join(sections)
    try:
        if '"' in joined:
            raise ValueError
        raw = joined.encode()
        if b"\\" in raw:
            raw = raw.replace(b"\\s", b" ")
            if b"\\" in raw:
                raise ValueError
        made = [b'{"' + one + b'"}' for one in raw.replace(b"=", b'":"').replace(b";", b'","').split(b"\n")]
        if len(made) != len(sections):
            raise ValueError
        shown = _shown_many(b"[" + b",".join(made) + b"]")
    except (ValueError, UnicodeEncodeError):  # msgspec.DecodeError is a ValueError
        return [plain_json(section) for section in sections]
    return [(tags, s.display_name, s.id) for tags, s in zip(made, shown, strict=True)]
