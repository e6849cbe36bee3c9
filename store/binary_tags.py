"""Tag values a frame keeps as bytes: the random ones of a Twitch line, out of its stored line.

A Twitch chat line carries random values besides its message id: the sending client's ``client-nonce``
(32 hex digits) and, on a reply, ``reply-parent-msg-id`` and ``reply-thread-parent-msg-id`` (uuids). In the
text of a line they cost a compressor more than their 16 bytes of randomness; a frame (:mod:`store.frame`,
version 5) holds them as 16 raw bytes each, in a column per tag, and the stored line keeps the tag with an
empty value.

The rule, for each tag of :data:`TAGS`, applied to the tag section (``@...`` up to the first space) of a
line's head only:

* the *first* element ``<tag>=<value>`` gives up its value when the value is in the tag's canonical form
  (lower-case hex of 16 bytes; a uuid's canonical text): ``client-nonce=<32 hex>`` becomes
  ``client-nonce=``, and the 16 bytes go into the tag's column;
* :func:`put_back` writes the text of those bytes into the first element ``<tag>=`` again.

Any other value (upper case, another length, an empty one) stays where it is and nothing goes into the
column for that line, so ``put_back(*take(heads)) == heads`` for every list of strings (the first element
``<tag>=`` is the same element before and after: only its value changes). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["TAGS", "Column", "put_back", "take"]


class _Kind(NamedTuple):
    length: int
    """Characters of the canonical text."""
    pack: Callable[[str], bytes | None]
    """The 16 bytes of a value, or None when the text is not the canonical form of any."""
    text: Callable[[bytes], str]


def _hex_bytes(value: str) -> bytes | None:
    try:
        packed = bytes.fromhex(value)
    except ValueError:
        return None
    return packed if packed.hex() == value else None


def _uuid_bytes(value: str) -> bytes | None:
    if value[8:9] != "-" or value[13:14] != "-" or value[18:19] != "-" or value[23:24] != "-":
        return None
    packed = _hex_bytes(value.replace("-", ""))
    return packed if packed is not None and len(packed) == 16 else None


def _uuid_text(value: bytes) -> str:
    h = value.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


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


def _value_at(head: str, key: str) -> int:
    """Where the value of the first element ``key=...`` of ``head``'s tag section starts (every ``;`` there
    parts two elements), or -1 when there is none."""
    if head[:1] != "@":
        return -1
    if head.startswith(key, 1) and head[1 + len(key) : 2 + len(key)] == "=":
        return 2 + len(key)
    at = head.find(f";{key}=", 1)
    if at < 0 or head.find(" ", 1, at) >= 0:
        return -1
    return at + 2 + len(key)


def take(heads: list[str]) -> tuple[list[str], list[Column]]:
    """``heads`` with the values of :data:`TAGS` taken out where they are canonical, and the column of each
    tag (module doc). ``heads`` is not changed."""
    out = list(heads)
    n = len(out)
    columns = []
    for key, (length, pack, _text) in TAGS:
        present = bytearray((n + 7) // 8)
        values = bytearray()
        marker = key + "="
        for i, head in enumerate(out):
            if marker not in head:
                continue
            start = _value_at(head, key)
            stop = start + length
            # the value is all of the element (the next one, the section's end or the line's follows)
            if start < 0 or (stop < len(head) and head[stop] not in "; ") or stop > len(head):
                continue
            packed = pack(head[start:stop])  # None unless canonical: no separator, no space inside
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
    for (key, (_length, _pack, text)), (present, values) in zip(TAGS, columns, strict=True):
        if len(present) != (n + 7) // 8:
            raise ValueError(f"a {key} column for {len(present) * 8} lines, the frame has {n}")
        if not any(present):
            if values:
                raise ValueError(f"a {key} column of {len(values)} bytes for no value")
            continue
        lines = [i for i in range(n) if present[i >> 3] >> (i & 7) & 1]
        if len(values) != 16 * len(lines):
            raise ValueError(f"a {key} column of {len(values)} bytes for {len(lines)} values")
        if out is heads:
            out = list(heads)
        at = 0
        for i in lines:
            head = out[i]
            start = _value_at(head, key)
            if start < 0 or (start < len(head) and head[start] not in "; "):
                raise ValueError(f"line {i} has no empty {key} to put its value in")
            out[i] = head[:start] + text(values[at : at + 16]) + head[start:]
            at += 16
    return out
