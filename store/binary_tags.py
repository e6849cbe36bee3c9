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

import re
from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["TAGS", "Column", "put_back", "take"]


class _Kind(NamedTuple):
    length: int
    """Characters of the canonical text."""
    canonical: re.Pattern[str]
    """The canonical text (only lower-case hex digits, and a uuid's dashes where they go)."""
    text: Callable[[str], str]
    """The canonical text of the 32 hex digits of a value."""


def _uuid_text(digits: str) -> str:
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


_NONCE: Final = _Kind(32, re.compile("[0-9a-f]{32}"), str)
_UUID: Final = _Kind(
    36, re.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), _uuid_text
)
TAGS: Final = (
    ("client-nonce", _NONCE),
    ("reply-parent-msg-id", _UUID),
    ("reply-thread-parent-msg-id", _UUID),
)
"""The tags whose values a frame holds as bytes, in the order of its columns."""
_BITS: Final = tuple(tuple(j for j in range(8) if b >> j & 1) for b in range(256))
"""The set bits of each byte value."""


class Column(NamedTuple):
    """One tag's values of a frame's lines: a bit per line (bit ``i % 8`` of byte ``i // 8``: the line's
    value is here) and the 16 bytes of each value, in line order."""

    present: bytes
    values: bytes


def _value_at(head: str, first: str, inner: str) -> int:
    """Where the value of the first element ``key=...`` of ``head``'s tag section starts (every ``;`` there
    parts two elements), or -1 when there is none; ``first`` is ``@key=``, ``inner`` is ``;key=``."""
    if head.startswith(first):
        return len(first)
    at = head.find(inner)
    if at < 0 or head[:1] != "@" or head.find(" ", 0, at) >= 0:
        return -1
    return at + len(inner)


def take(heads: list[str]) -> tuple[list[str], list[Column]]:
    """``heads`` with the values of :data:`TAGS` taken out where they are canonical, and the column of each
    tag (module doc). ``heads`` is not changed."""
    out = list(heads)
    n = len(out)
    columns = []
    for key, (length, canonical, _text) in TAGS:
        first, inner = f"@{key}=", f";{key}="
        present = bytearray((n + 7) // 8)
        digits: list[str] = []
        for i, head in enumerate(out):
            if inner not in head and not head.startswith(first):
                continue
            start = _value_at(head, first, inner)
            stop = start + length
            # all of the element's value, canonical (the next element, the section's end or the line's after)
            if start < 0 or not canonical.fullmatch(head, start, stop) or head[stop : stop + 1] not in "; ":
                continue
            digits.append(head[start:stop])
            out[i] = head[:start] + head[stop:]
            present[i >> 3] |= 1 << (i & 7)
        values = bytes.fromhex("".join(digits).replace("-", "")) if digits else b""
        columns.append(Column(bytes(present), values))
    return out, columns


def put_back(heads: list[str], columns: list[Column]) -> list[str]:
    """``heads`` with each column's values written back into the first element of their tag (the inverse
    of :func:`take`). ValueError: columns that do not fit ``heads`` (a damaged frame)."""
    if len(columns) != len(TAGS):
        raise ValueError(f"{len(columns)} tag columns, expected {len(TAGS)}")
    out = heads
    n = len(heads)
    for (key, (_length, _canonical, text)), (present, values) in zip(TAGS, columns, strict=True):
        if len(present) != (n + 7) // 8:
            raise ValueError(f"a {key} column for {len(present) * 8} lines, the frame has {n}")
        lines = [8 * k + j for k, b in enumerate(present) if b for j in _BITS[b]]
        if len(values) != 16 * len(lines) or (lines and lines[-1] >= n):
            raise ValueError(f"a {key} column of {len(values)} bytes for {len(lines)} values")
        if not lines:
            continue
        if out is heads:
            out = list(heads)
        first, inner = f"@{key}=", f";{key}="
        digits = values.hex()
        texts = (
            [digits[k : k + 32] for k in range(0, len(digits), 32)]
            if text is str
            else [text(digits[k : k + 32]) for k in range(0, len(digits), 32)]
        )
        for i, value in zip(lines, texts, strict=True):
            head = out[i]
            start = _value_at(head, first, inner)
            if start < 0 or head[start : start + 1] not in "; ":
                raise ValueError(f"line {i} has no empty {key} to put its value in")
            out[i] = f"{head[:start]}{value}{head[start:]}"
    return out
