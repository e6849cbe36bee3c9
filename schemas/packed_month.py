"""A closed user-month packed into one cell: the rows of a ``chat_by_user`` month partition as one value.

``chatlog pack`` (:mod:`sink.pack`) replaces the rows of a user's month partition, once the month is over,
by the static column ``packed`` of the same partition: the rows' values in columns, msgpack-encoded and
Zstandard-compressed as one frame. A reader of the month then gets one cell instead of one row per message
(Cassandra and the driver pay per row: ~2.7 and ~1.7 µs; docs/storage.md), and the frame compresses the
user's lines as one stream.

The frame: ``zstd(msgpack([VERSION, first_sent_ms, sent_deltas, message_ids, lines, received_offsets]))``,
the rows in clustering order ``(sent_at, message_id)``:

* ``sent_deltas``: each row's ``sent_at`` (epoch ms) minus the row's before (the first's minus
  ``first_sent_ms``: 0), so small integers;
* ``message_ids``: the uuid's canonical text, as the readers select it (``CAST(message_id AS text)``);
* ``lines``: the stored line as the row holds it (:mod:`schemas.stored_line`: the id and time values left
  out);
* ``received_offsets``: ``received_at - sent_at`` in ms, or nil where the row has no receive time.

:func:`unpack` gives the rows back as the readers' tuples ``(sent_ms, message_id, line, received_ms)``
(:data:`serve.store.cassandra_store.ROW_COLUMNS`' order). Pure; no driver.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

import cramjam
import msgspec

__all__ = ["LEVEL", "VERSION", "PackError", "PackedRow", "pack", "unpack"]

VERSION: Final = 1
LEVEL: Final = 9
"""Zstandard level of a frame (a month is packed once; level 9 is where the user table's chunks were
chosen, docs/storage.md)."""

PackedRow = tuple[int, str, str, int | None]
"""``(sent_ms, message_id, line, received_ms)``."""

_Frame = tuple[int, int, list[int], list[str], list[str], list[int | None]]
_decoder: Final = msgspec.msgpack.Decoder(_Frame)
_encoder: Final = msgspec.msgpack.Encoder()


class PackError(ValueError):
    """A ``packed`` value that is not a frame of this module (damaged, or of a newer version)."""


def pack(rows: Sequence[PackedRow], *, level: int = LEVEL) -> bytes:
    """The frame of ``rows`` (in clustering order, at least one)."""
    if not rows:
        raise ValueError("nothing to pack")
    sents = [row[0] for row in rows]
    first = sents[0]
    deltas = [b - a for a, b in zip([first, *sents], sents, strict=False)]
    received = [None if row[3] is None else row[3] - row[0] for row in rows]
    frame = (VERSION, first, deltas, [row[1] for row in rows], [row[2] for row in rows], received)
    return bytes(cramjam.zstd.compress(_encoder.encode(frame), level=level))


def unpack(value: bytes) -> list[PackedRow]:
    """The rows of a frame, in the order they were packed; :class:`PackError` for anything else."""
    try:
        version, first, deltas, ids, lines, received = _decoder.decode(cramjam.zstd.decompress(value))
    except (cramjam.DecompressionError, msgspec.DecodeError, msgspec.ValidationError) as e:
        raise PackError(f"not a packed month: {e}") from None
    if version != VERSION:
        raise PackError(f"packed month of version {version}, this reader knows {VERSION}")
    if not len(deltas) == len(ids) == len(lines) == len(received):
        raise PackError("packed month with columns of different lengths")
    sents = list(itertools.accumulate(deltas, initial=first))[1:]
    received_ms = [None if r is None else s + r for s, r in zip(sents, received, strict=True)]
    return list(zip(sents, ids, lines, received_ms, strict=True))
