"""A packed month's frame as version 1 of schemas.packed_month wrote it (whole lines, no chat split): the
keyspaces packed before version 2 hold these, and the readers still read them."""

from __future__ import annotations

import cramjam
import msgspec

from schemas.packed_month import LEVEL, PackedRow


def v1_frame(rows: list[PackedRow], *, level: int = LEVEL) -> bytes:
    """``zstd(msgpack([1, first_sent_ms, sent_deltas, message_ids, lines, received_offsets]))`` of
    ``rows``."""
    sents = [row[0] for row in rows]
    deltas = [b - a for a, b in zip([sents[0], *sents], sents, strict=False)]
    received = [None if row[3] is None else row[3] - row[0] for row in rows]
    frame = [1, sents[0], deltas, [row[1] for row in rows], [row[2] for row in rows], received]
    return bytes(cramjam.zstd.compress(msgspec.msgpack.encode(frame), level=level))
