"""Tag values a frame keeps as bytes: the random ones of a Twitch line, out of its stored line.

A Twitch chat line carries random values besides its message id: the sending client's ``client-nonce``
(32 hex digits) and, on a reply, ``reply-parent-msg-id`` and ``reply-thread-parent-msg-id`` (uuids). In the
text of a line they cost a compressor more than their 16 bytes of randomness; a frame (:mod:`store.frame`,
version 5) holds them as 16 raw bytes each, in a column per tag, and the stored line keeps the tag with an
empty value.

The rule, for each tag of :data:`TAGS`, applied to the tag section (``@...`` up to the first space) of a
line's head only:

* the *first* element whose key is the tag's gives up its value when the value is in the tag's canonical
  form (lower-case hex of 16 bytes; a uuid's canonical text): ``client-nonce=<32 hex>`` becomes
  ``client-nonce=``, and the 16 bytes go into the tag's column;
* :func:`put_back` writes the text of those bytes into the first element of that key again.

Any other value (upper case, another length, an empty one) stays where it is and nothing goes into the
column for that line, so ``put_back(*take(heads)) == heads`` for every list of strings (the first element
of a key is the same element before and after: only its value changes). Pure.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["TAGS", "Column", "put_back", "take"]


class _Kind(NamedTuple):
    length: int
    """Characters of the canonical text."""
    pack: Callable[[str], bytes | None]
    """The 16 bytes of a value, or None when the text is not the canonical form of any."""
    text: Callable[[bytes], str]


_HEX: Final = frozenset("0123456789abcdef")


def _hex_bytes(value: str) -> bytes | None:
    return bytes.fromhex(value) if len(value) == 32 and _HEX.issuperset(value) else None


def _uuid_bytes(value: str) -> bytes | None:
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return None
    return parsed.bytes if str(parsed) == value else None


def _uuid_text(value: bytes) -> str:
    return str(uuid.UUID(bytes=value))


_NONCE: Final = _Kind(32, _hex_bytes, bytes.hex)
_UUID: Final = _Kind(36, _uuid_bytes, _uuid_text)
TAGS: Final = (
    ("client-nonce", _NONCE),
    ("reply-parent-msg-id", _UUID),
    ("reply-thread-parent-msg-id", _UUID),
)
"""The tags whose values a frame holds as bytes, in the order of its columns."""


class Column(NamedTuple):
    """One tag's values of a frame's lines: a bit per line (bit ``i % 8`` of byte ``i // 8``: the line's
    value is here) and the 16 bytes of each value, in line order."""

    present: bytes
    values: bytes


def _value_span(head: str, key: str) -> tuple[int, int]:
    """Start and end of the value of the first element of key ``key`` in ``head``'s tag section, or
    (-1, -1) when it has none with a value sign (``key=``)."""
    if head[:1] != "@":
        return -1, -1
    end = head.find(" ")
    if end < 0:
        end = len(head)
    at = 1 if head.startswith(key, 1) and head[1 + len(key) : 2 + len(key)] in ("=", ";", " ", "") else -1
    if at < 0:
        at = head.find(";" + key, 1, end)
        while at >= 0 and head[at + 1 + len(key) : at + 2 + len(key)] not in ("=", ";", " ", ""):
            at = head.find(";" + key, at + 1, end)
        if at < 0:
            return -1, -1
        at += 1
    sign = at + len(key)
    if sign >= end or head[sign] != "=":
        return -1, -1
    stop = head.find(";", sign, end)
    return sign + 1, end if stop < 0 else stop


def take(heads: list[str]) -> tuple[list[str], list[Column]]:
    """``heads`` with the values of :data:`TAGS` taken out where they are canonical, and the column of each
    tag (module doc). ``heads`` is not changed."""
    out = list(heads)
    columns = []
    for key, kind in TAGS:
        present = bytearray((len(out) + 7) // 8)
        values = bytearray()
        marker = key + "="
        for i, head in enumerate(out):
            if marker not in head:
                continue
            start, stop = _value_span(head, key)
            if start < 0 or stop - start != kind.length:
                continue
            packed = kind.pack(head[start:stop])
            if packed is None:
                continue
            out[i] = head[:start] + head[stop:]
            present[i >> 3] |= 1 << (i & 7)
            values += packed
        columns.append(Column(bytes(present), bytes(values)))
    return out, columns


def put_back(heads: list[str], columns: list[Column]) -> list[str]:
    """``heads`` with each column's values written back into the first element of their tag (the inverse
    of :func:`take`). ValueError: columns that do not fit ``heads`` (a damaged frame)."""
    if len(columns) != len(TAGS):
        raise ValueError(f"{len(columns)} tag columns, expected {len(TAGS)}")
    out = heads
    n = len(heads)
    for (key, kind), (present, values) in zip(TAGS, columns, strict=True):
        if len(present) != (n + 7) // 8:
            raise ValueError(f"a {key} column for {len(present) * 8} lines, the frame has {n}")
        lines = [i for i in range(n) if present[i >> 3] >> (i & 7) & 1]
        if len(values) != 16 * len(lines):
            raise ValueError(f"a {key} column of {len(values)} bytes for {len(lines)} values")
        if not lines:
            continue
        if out is heads:
            out = list(heads)
        for j, i in enumerate(lines):
            head = out[i]
            start, stop = _value_span(head, key)
            if start < 0 or stop != start:
                raise ValueError(f"line {i} has no empty {key} to put its value in")
            out[i] = head[:start] + kind.text(values[16 * j : 16 * j + 16]) + head[start:]
    return out
