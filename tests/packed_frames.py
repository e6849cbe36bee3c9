"""Frames of versions 1 to 3 as the packed user-months of layout 1 held them, made by the encoder of the
deleted ``schemas/packed_month.py`` (git history, before store/): a keyspace of that layout holds these, and
:mod:`store.frame` reads them for the migration (:mod:`store.migrate`), so tests build them here.

* version 1: ``zstd(msgpack([1, first_sent_ms, sent_deltas, ids, lines, received_offsets]))``, whole lines;
* version 2: ``[2, first, deltas, ids, heads, received, channels, logins, senders, texts, actions]``: a chat
  message's line split into its head and its text (found when it was packed, as version 4's are:
  :func:`store.frame.chat_columns`);
* version 3: version 2 and ``plains``.

Ids are the uuids' canonical text (as ``CAST(message_id AS text)`` read them); always Zstandard-compressed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import cramjam
import msgspec

from store.frame import Split, chat_columns

LEVEL: Final = 19
"""The level ``chatlog pack`` packed at."""

PackedRow = tuple[int, str, str, int | None]
"""``(sent_ms, message id text, stored line, received_ms)``, in clustering order."""
ChatSplit = Split
"""``(channel, user_login, text, is_action, plain)``: the chat split of a line, as version 4's."""


def old_frame(
    rows: Sequence[PackedRow],
    chats: Sequence[ChatSplit | None] | None = None,
    *,
    version: int = 3,
    level: int = LEVEL,
) -> bytes:
    """The frame of ``rows`` as version ``version`` (1, 2 or 3) wrote it; a row is split by its item of
    ``chats`` where its line ends in that chat's text exactly (versions 2 and 3; version 1 keeps lines
    whole)."""
    if not rows:
        raise ValueError("nothing to pack")
    if chats is not None and len(chats) != len(rows):
        raise ValueError(f"{len(chats)} chat splits for {len(rows)} rows")
    sents = [row[0] for row in rows]
    first = sents[0]
    deltas = [b - a for a, b in zip([first, *sents], sents, strict=False)]
    received = [None if row[3] is None else row[3] - row[0] for row in rows]
    ids = [row[1] for row in rows]
    if version == 1:
        frame: list[object] = [1, first, deltas, ids, [row[2] for row in rows], received]
        return bytes(cramjam.zstd.compress(msgspec.msgpack.encode(frame), level=level))
    if version not in (2, 3):
        raise ValueError(f"no version {version} of the old frame")
    split = chat_columns([row[2] for row in rows], chats or ())
    encode = msgspec.msgpack.encode
    frame = [
        version,
        first,
        deltas,
        msgspec.Raw(encode(ids)),
        msgspec.Raw(encode(split.heads)),
        msgspec.Raw(encode(received)),
        [channel for channel, _ in split.table],
        [login for _, login in split.table],
        split.senders,
        split.texts,
        split.actions,
    ]
    if version == 3:
        frame.append(split.plains)
    return bytes(cramjam.zstd.compress(encode(frame), level=level))


def v1_frame(rows: list[PackedRow], *, level: int = LEVEL) -> bytes:
    """``zstd(msgpack([1, first_sent_ms, sent_deltas, message_ids, lines, received_offsets]))`` of
    ``rows``."""
    return old_frame(rows, version=1, level=level)
