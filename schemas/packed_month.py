"""A closed user-month packed into one cell: the rows of a ``chat_by_user`` month partition as one value.

``chatlog pack`` (:mod:`sink.pack`) replaces the rows of a user's month partition, once the month is over,
by the static column ``packed`` of the same partition: the rows' values in columns, msgpack-encoded and
Zstandard-compressed as one frame. A reader of the month then gets one cell instead of one row per message
(Cassandra and the driver pay per row: ~2.7 and ~1.7 µs; docs/storage.md), and the frame compresses the
user's lines as one stream.

The frame (version 3): ``zstd(msgpack([3, first_sent_ms, sent_deltas, message_ids, heads, received_offsets,
channels, logins, senders, texts, actions, plains]))``, the rows in clustering order ``(sent_at,
message_id)``, one list per column:

* ``sent_deltas``: each row's ``sent_at`` (epoch ms) minus the row's before (the first's minus
  ``first_sent_ms``: 0), so small integers;
* ``message_ids``: the uuid's canonical text, as the readers select it (``CAST(message_id AS text)``);
* ``heads``: the stored line as the row holds it (:mod:`schemas.stored_line`: the id and time values left
  out), without its trailing text where the row has a chat split (below);
* ``received_offsets``: ``received_at - sent_at`` in ms, or nil where the row has no receive time;
* a chat message's split, found once when it is packed (:func:`sink.pack.chat_split`) instead of on every
  read: ``texts``, its text as its event has it (nil: the row has no split); ``actions``, whether it is a
  ``/me`` (CTCP ACTION); ``senders``, the index of its ``(channel, user_login)`` in the table of the
  frame's distinct ones, ``channels`` and ``logins`` (a login may be nil; a month is mostly one channel
  and one sender: one entry, read once, not once per row). The stored line is ``head + text`` (an
  action's: ``head + "\x01ACTION " + text + "\x01"``); :func:`pack` splits a line only where that holds
  exactly, every other row has nil there (sender 0, not an action) and its whole line in ``heads``;
* ``plains``: whether a split row's line as received has a plain tag section
  (:func:`core.irc_tags.plain_tags`, checked once when it is packed): a json answer then has its tags'
  JSON by replaces alone (:func:`core.irc_tags.tags_json`), not by parsing them into a dict and encoding
  that (False for every other row).

Version 2 (version 3 without ``plains``) and version 1 (``[1, first_sent_ms, sent_deltas, message_ids, lines,
received_offsets]``: whole lines, no split) are read as well: the months packed before, which
:mod:`sink.pack` leaves as they are unless asked to ``repack`` them.

:func:`unpack_frame` reads a frame as a :class:`Frame`: the send times, chats and ``/me`` flags at once, the
ids, lines and receive times only when first asked (the msgpack of those three columns is kept as it is
until then: a text answer of chat messages never asks). :func:`unpack` gives the rows back as
:data:`UnpackedRow`: the readers' columns ``(sent_ms, message_id,
line, received_ms)`` (:data:`serve.store.cassandra_store.ROW_COLUMNS`' order, the line whole) and the
row's chat ``(channel, user_login, text)`` (None without a split) and ``is_action``. Pure; no driver.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Final

import cramjam
import msgspec

__all__ = [
    "LEVEL",
    "VERSION",
    "ChatSplit",
    "Frame",
    "PackError",
    "PackedChat",
    "PackedRow",
    "UnpackedRow",
    "pack",
    "unpack",
    "unpack_frame",
]

VERSION: Final = 3
LEVEL: Final = 19
"""Zstandard level of a frame. A month is packed once and read many times, and reading does not depend on
the level: 19 takes ~30x the CPU of 9 to pack (~90 us a row) for frames 9.5 % smaller (74.8 against 82.7 B
a row on ``chatlog bench vs-justlog``'s data; docs/storage.md). ``chatlog pack --level`` chooses another."""

PackedRow = tuple[int, str, str, int | None]
"""``(sent_ms, message_id, line, received_ms)``."""
ChatSplit = tuple[str, str | None, str, bool, bool]
"""``(channel, user_login, text, is_action, plain)`` of a row's chat message, as its event has them, and
whether the tag section of its line as received is plain (:func:`core.irc_tags.plain_tags`)."""
PackedChat = tuple[str, str | None, str]
"""``(channel, user_login, text)`` of an unpacked row's chat message."""
UnpackedRow = tuple[int, str, str, int | None, PackedChat | None, bool]
"""``(sent_ms, message_id, line, received_ms, chat, is_action)``: ``chat`` None where the row has no split
(then ``is_action`` is False, whatever the line is)."""

_ACTION: Final = "\x01ACTION "
_ACTION_END: Final = "\x01"


class _FrameV1(msgspec.Struct, array_like=True, tag=1):
    first: int
    deltas: list[int]
    ids: list[str]
    lines: list[str]
    received: list[int | None]


class _FrameV2(msgspec.Struct, array_like=True, tag=2):
    first: int
    deltas: list[int]
    ids: msgspec.Raw
    """``list[str]``, still encoded (like ``heads`` and ``received``): decoded when a row's id, line or
    receive time is asked (:class:`Frame`), never for a text answer of chat messages."""
    heads: msgspec.Raw
    received: msgspec.Raw
    channels: list[str]
    logins: list[str | None]
    senders: list[int]
    texts: list[str | None]
    actions: list[bool]


class _FrameV3(_FrameV2, tag=3):
    plains: list[bool]


_decoder: Final = msgspec.msgpack.Decoder(_FrameV1 | _FrameV2 | _FrameV3)
_encoder: Final = msgspec.msgpack.Encoder()
_strings: Final = msgspec.msgpack.Decoder(list[str])
_offsets: Final = msgspec.msgpack.Decoder(list[int | None])


class PackError(ValueError):
    """A ``packed`` value that is not a frame of this module (damaged, or of a newer version)."""


def _trailing(text: str, is_action: bool) -> str:
    return f"{_ACTION}{text}{_ACTION_END}" if is_action else text


def pack(
    rows: Sequence[PackedRow], chats: Sequence[ChatSplit | None] | None = None, *, level: int = LEVEL
) -> bytes:
    """The frame of ``rows`` (in clustering order, at least one), each row split by its item of ``chats``
    (None, or ``chats`` None: whole) where its line ends with that chat's text exactly (see the module
    doc); the caller vouches that the chat's values are the line's."""
    if not rows:
        raise ValueError("nothing to pack")
    if chats is not None and len(chats) != len(rows):
        raise ValueError(f"{len(chats)} chat splits for {len(rows)} rows")
    sents = [row[0] for row in rows]
    first = sents[0]
    deltas = [b - a for a, b in zip([first, *sents], sents, strict=False)]
    received = [None if row[3] is None else row[3] - row[0] for row in rows]
    heads = [row[2] for row in rows]
    n = len(rows)
    table: dict[tuple[str, str | None], int] = {}  # (channel, login): its index
    senders = [0] * n
    texts: list[str | None] = [None] * n
    actions = [False] * n
    plains = [False] * n
    for i, chat in enumerate(chats or ()):
        if chat is None:
            continue
        channel, login, text, is_action, plain = chat
        line = heads[i]
        trailing = _trailing(text, is_action)
        if not line.endswith(trailing):
            continue
        heads[i] = line[: len(line) - len(trailing)]  # head + trailing: the line, as unpack makes it
        senders[i] = table.setdefault((channel, login), len(table))
        texts[i], actions[i], plains[i] = text, is_action, plain
    encode = _encoder.encode
    frame = _FrameV3(
        first,
        deltas,
        msgspec.Raw(encode([row[1] for row in rows])),
        msgspec.Raw(encode(heads)),
        msgspec.Raw(encode(received)),
        [channel for channel, _ in table],
        [login for _, login in table],
        senders,
        texts,
        actions,
        plains,
    )
    return bytes(cramjam.zstd.compress(_encoder.encode(frame), level=level))


def _refused(data: bytes, error: msgspec.ValidationError) -> PackError:
    """The error of a frame whose msgpack is not one of this module's: its version named if it has one."""
    try:
        value = msgspec.msgpack.decode(data)
    except msgspec.DecodeError:
        value = None
    if isinstance(value, list) and value and type(value[0]) is int and value[0] not in range(1, VERSION + 1):
        return PackError(f"packed month of version {value[0]}, this reader knows 1 to {VERSION}")
    return PackError(f"not a packed month: {error}")


class Frame:
    """A frame's rows as columns: their send times, chats and ``/me`` flags decoded at once; their ids,
    lines and receive times (:meth:`rest`) when first asked: a text answer of chat messages reads only the
    former (decoding and joining the lines was ~40 % of unpacking a 300-row month)."""

    __slots__ = ("_ordered", "_rest", "_v2", "actions", "chats", "plains", "sents", "version")

    def __init__(
        self,
        sents: list[int],
        chats: list[PackedChat | None],
        actions: list[bool],
        plains: list[bool],
        v2: _FrameV2 | None,
        rest: tuple[list[str], list[str], list[int | None]] | None = None,
        version: int = VERSION,
        ordered: bool = True,
    ) -> None:
        self._ordered = ordered
        """Whether the rows are in time order (every frame ``chatlog pack`` writes)."""
        self.version = version
        """The frame's version (an older one is read as well; ``chatlog pack --repack`` writes it anew)."""
        self.sents = sents
        """Each row's ``sent_at`` (epoch ms), in the frame's order (ascending in every frame ``chatlog pack``
        writes)."""
        self.chats = chats
        """Each row's ``(channel, user_login, text)``, None where it has no split."""
        self.actions = actions
        """Each row's ``is_action`` (False where it has no split)."""
        self.plains = plains
        """Whether each row's line as received has a plain tag section (:func:`core.irc_tags.plain_tags`), as
        its split found it (False where it has none, and in frames older than version 3)."""
        self._v2 = v2
        self._rest = rest

    def rest(self) -> tuple[list[str], list[str], list[int | None]]:
        """Each row's message id, whole stored line and receive time (epoch ms, or None), decoded on the
        first call; :class:`PackError` for columns that do not match the rows."""
        if self._rest is None:
            self._rest, self._v2 = _rest(self.sents, self._v2), None
        return self._rest

    def window(self, lo: int, hi: int, reverse: bool) -> Sequence[int]:
        """The indices of the rows sent within ``[lo, hi)``, in the frame's order (the time order of a frame
        ``chatlog pack`` wrote; reversed if ``reverse``)."""
        sents = self.sents
        if self._ordered:
            start, stop = bisect.bisect_left(sents, lo), bisect.bisect_left(sents, hi)
            return range(stop - 1, start - 1, -1) if reverse else range(start, stop)
        found = [i for i, sent in enumerate(sents) if lo <= sent < hi]
        return found[::-1] if reverse else found

    def rows(self, indices: Sequence[int]) -> list[UnpackedRow]:
        """The rows at ``indices`` (:meth:`window`) whole (their ids and lines read: :meth:`rest`)."""
        ids, lines, received = self.rest()
        sents, chats, actions = self.sents, self.chats, self.actions
        return [(sents[i], ids[i], lines[i], received[i], chats[i], actions[i]) for i in indices]


def _rest(sents: list[int], v2: _FrameV2 | None) -> tuple[list[str], list[str], list[int | None]]:
    if v2 is None:
        raise PackError("a frame without its columns")
    try:
        ids, heads, received = (
            _strings.decode(v2.ids),
            _strings.decode(v2.heads),
            _offsets.decode(v2.received),
        )
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise PackError(f"not a packed month: {e}") from None
    n = len(sents)
    if not n == len(ids) == len(heads) == len(received):
        raise PackError("packed month with columns of different lengths")
    received_ms = [None if r is None else s + r for s, r in zip(sents, received, strict=True)]
    lines = [
        head if text is None else f"{head}{_ACTION}{text}{_ACTION_END}" if action else head + text
        for head, text, action in zip(heads, v2.texts, v2.actions, strict=True)
    ]
    return ids, lines, received_ms


def unpack_frame(value: bytes) -> Frame:
    """The rows of a frame (version 1 to 3) as a :class:`Frame`; :class:`PackError` for anything else (the
    columns read at once are checked here, the others when first read)."""
    try:
        data = bytes(cramjam.zstd.decompress(value))  # bytes: msgspec.Raw columns keep a view of it
        frame = _decoder.decode(data)
    except msgspec.ValidationError as e:  # a DecodeError: first
        raise _refused(bytes(data), e) from None
    except (cramjam.DecompressionError, msgspec.DecodeError) as e:
        raise PackError(f"not a packed month: {e}") from None
    deltas = frame.deltas
    n = len(deltas)
    sents = list(itertools.accumulate(deltas, initial=frame.first))[1:]
    ordered = min(deltas[1:], default=0) >= 0  # sent times that never go back: bisected, not filtered
    if isinstance(frame, _FrameV1):
        received = frame.received
        if not n == len(frame.ids) == len(frame.lines) == len(received):
            raise PackError("packed month with columns of different lengths")
        received_ms = [None if r is None else s + r for s, r in zip(sents, received, strict=True)]
        return Frame(
            sents,
            [None] * n,
            [False] * n,
            [False] * n,
            None,
            (frame.ids, frame.lines, received_ms),
            version=1,
            ordered=ordered,
        )
    texts, actions, senders = frame.texts, frame.actions, frame.senders
    channels, logins = frame.channels, frame.logins
    plains = frame.plains if isinstance(frame, _FrameV3) else [False] * n
    if any(len(column) != n for column in (senders, texts, actions, plains)) or len(channels) != len(logins):
        raise PackError("packed month with columns of different lengths")
    if len(channels) == 1:  # one sender in one channel: the usual month
        channel, login = channels[0], logins[0]
        chats = [None if text is None else (channel, login, text) for text in texts]
    else:
        try:
            if senders and min(senders) < 0:
                raise IndexError
            chats = [
                None if text is None else (channels[i], logins[i], text)
                for i, text in zip(senders, texts, strict=True)
            ]
        except IndexError:
            raise PackError("packed month with a sender not in its table") from None
    return Frame(
        sents, chats, actions, plains, frame, version=3 if isinstance(frame, _FrameV3) else 2, ordered=ordered
    )


def unpack(value: bytes) -> list[UnpackedRow]:
    """The rows of a frame (version 1 to 3), in the order they were packed; :class:`PackError` for anything
    else."""
    frame = unpack_frame(value)
    return frame.rows(range(len(frame.sents)))
