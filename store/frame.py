"""A block's lines as one value: the frame of :mod:`store.blocks`, its columns msgpack-encoded, Zstandard-
compressed when that pays.

Version 5 (written): ``msgpack([5, first_sent_ms, sent_deltas, ids, heads, received_offsets, channels,
logins, senders, texts, actions, plains, users, whos, tags])``, the lines in :func:`store.keys.line_order`,
one list per column:

* ``sent_deltas``: each line's ``sent_at`` (epoch ms) minus the line's before (the first's minus
  ``first_sent_ms``: 0), so small integers;
* ``ids``: the message uuids' 16 bytes each, one after the other;
* ``heads``: the stored line (:mod:`store.stored_line`: the id and time values left out), without its
  trailing text where the line has a chat split (below), and without the values of the tags that
  ``tags`` holds;
* ``received_offsets``: ``received_at - sent_at`` in ms, or nil;
* a chat message's split, found once when it is written instead of on every read: ``texts``, its text as
  its event has it (nil: no split); ``actions``, whether it is a ``/me``; ``senders``, the index of its
  ``(channel, user_login)`` in the frame's table of distinct ones, ``channels`` and ``logins``. The stored
  line is ``head + text`` (an action's: ``head + "\\x01ACTION " + text + "\\x01"``);
* ``plains``: whether a split line's tag section is plain (:func:`core.irc_tags.plain_tags`): a json
  answer then has its tags' JSON by replaces alone;
* ``whos``: the index of the user key the line is filed under (:func:`store.keys.filed_under`) in the
  frame's table ``users``, or -1: what erasure, opt-outs and counts by user read without parsing a line;
* ``tags``: the random tag values (``client-nonce``, the reply ids) as 16 bytes each, a ``(present,
  values)`` pair per tag of :data:`store.binary_tags.TAGS` (:mod:`store.binary_tags`), or no pair at all
  (a live frame: the heads keep those values).

Version 4 is version 5 without ``tags`` (the heads keep those values).

Versions 1 to 3 are the packed user-months of the layouts before (``[1, first, deltas, ids, lines,
received]``: whole lines; 2: with the chat split; 3: with ``plains``; ids as uuid text): read, for the
migration of such a keyspace (:mod:`store.migrate`), never written.

A frame of at most :data:`RAW_MAX_BYTES` of msgpack is stored as it is (the table's own compression then
works across a partition's small frames); a larger one is compressed at ``level``
(:data:`LIVE_LEVEL` for what the sink writes, :data:`PACKED_LEVEL` for a closed period packed). Pure.
"""

from __future__ import annotations

import bisect
import itertools
import uuid
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

import cramjam
import msgspec

from store import binary_tags

__all__ = [
    "LIVE_LEVEL",
    "PACKED_LEVEL",
    "RAW_MAX_BYTES",
    "VERSION",
    "ChatColumns",
    "Frame",
    "FrameError",
    "Line",
    "Split",
    "chat_columns",
    "content_size",
    "decode",
    "encode",
]

VERSION: Final = 5
LIVE_LEVEL: Final = 3
"""Zstandard level of the frames the streaming sink writes (many small ones, written once, read a few times
while their period is open)."""
PACKED_LEVEL: Final = 19
"""Zstandard level of a closed period packed into one frame: packed once, read many times; reading does not
depend on the level."""
RAW_MAX_BYTES: Final = 1024
"""A frame's msgpack up to this size is stored uncompressed."""
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
_SIZED_MAX: Final = 64 << 20
"""The largest decompressed size a frame's header is taken at its word for (a damaged header asks no more)."""
_ACTION: Final = "\x01ACTION "
_ACTION_END: Final = "\x01"

Split = tuple[str, str | None, str, bool, bool]
"""``(channel, user_login, text, is_action, plain)`` of a line's chat message (its event's values), and
whether its tag section is plain."""
Line = tuple[int, bytes, str, int | None, Split | None, str | None]
"""A line to frame: ``(sent_ms, message uuid's 16 bytes, stored line, received_ms, chat split, filed-under
user)``."""
Chat = tuple[str, str | None, str]
"""``(channel, user_login, text)`` of a framed chat message."""


class FrameError(ValueError):
    """A value that is not a frame of this module (damaged, or of a newer version)."""


class _V1(msgspec.Struct, array_like=True, tag=1):
    first: int
    deltas: list[int]
    ids: list[str]
    lines: list[str]
    received: list[int | None]


class _V2(msgspec.Struct, array_like=True, tag=2):
    first: int
    deltas: list[int]
    ids: msgspec.Raw
    heads: msgspec.Raw
    received: msgspec.Raw
    channels: list[str]
    logins: list[str | None]
    senders: list[int]
    texts: list[str | None]
    actions: list[bool]


class _V3(_V2, tag=3):
    plains: list[bool]


class _V4(msgspec.Struct, array_like=True, tag=4):
    first: int
    deltas: list[int]
    ids: bytes
    heads: msgspec.Raw
    received: msgspec.Raw
    channels: list[str]
    logins: list[str | None]
    senders: list[int]
    texts: list[str | None]
    actions: list[bool]
    plains: list[bool]
    users: list[str]
    whos: list[int]


class _V5(_V4, tag=5):
    tags: list[tuple[bytes, bytes]]


_decoder: Final = msgspec.msgpack.Decoder(_V1 | _V2 | _V3 | _V4 | _V5)
_encoder: Final = msgspec.msgpack.Encoder()
_strings: Final = msgspec.msgpack.Decoder(list[str])
_offsets: Final = msgspec.msgpack.Decoder(list[int | None])


def _trailing(text: str, is_action: bool) -> str:
    return f"{_ACTION}{text}{_ACTION_END}" if is_action else text


class ChatColumns(NamedTuple):
    """The chat split columns of a frame (versions 2 to 4): each stored line's head (the line without its
    split-off text), the table of distinct ``(channel, user_login)``, and each line's sender (its index in
    the table), text, ``/me`` flag and plainness (0, None, False, False where the line has no split)."""

    heads: list[str]
    table: dict[tuple[str, str | None], int]
    senders: list[int]
    texts: list[str | None]
    actions: list[bool]
    plains: list[bool]


def chat_columns(heads: list[str], splits: Iterable[Split | None]) -> ChatColumns:
    """``heads``, the stored lines, split in place by their items of ``splits``: a line is split only where
    it ends with its chat's text exactly (an action's: ``\\x01ACTION text\\x01``)."""
    n = len(heads)
    table: dict[tuple[str, str | None], int] = {}
    senders = [0] * n
    texts: list[str | None] = [None] * n
    actions = [False] * n
    plains = [False] * n
    for i, split in enumerate(splits):
        if split is None:
            continue
        channel, login, text, is_action, plain = split
        stored = heads[i]
        trailing = _trailing(text, is_action)
        if not stored.endswith(trailing):
            continue
        heads[i] = stored[: len(stored) - len(trailing)]
        senders[i] = table.setdefault((channel, login), len(table))
        texts[i], actions[i], plains[i] = text, is_action, plain
    return ChatColumns(heads, table, senders, texts, actions, plains)


def encode(lines: Sequence[Line], *, level: int = LIVE_LEVEL) -> bytes:
    """The frame of ``lines`` (in :func:`store.keys.line_order`, at least one). A line is split by its chat
    split only where its stored line ends with that chat's text exactly. The random tag values go into
    ``tags`` only in a frame compressed above :data:`LIVE_LEVEL` (packed, backfilled, migrated: kept for
    long, where their bytes count); the streaming sink's frames keep them in their heads, ``tags`` empty
    (written once and repacked within the hour, where the CPU counts)."""
    if not lines:
        raise ValueError("nothing to frame")
    sents = [line[0] for line in lines]
    first = sents[0]
    deltas = [b - a for a, b in zip([first, *sents], sents, strict=False)]
    received = [None if line[3] is None else line[3] - line[0] for line in lines]
    users: dict[str, int] = {}
    whos = [-1 if line[5] is None else users.setdefault(line[5], len(users)) for line in lines]
    chats = chat_columns([line[2] for line in lines], [line[4] for line in lines])
    heads, tags = binary_tags.take(chats.heads) if level > LIVE_LEVEL else (chats.heads, [])
    pack = _encoder.encode
    frame = _V5(
        first,
        deltas,
        b"".join(line[1] for line in lines),
        msgspec.Raw(pack(heads)),
        msgspec.Raw(pack(received)),
        [channel for channel, _ in chats.table],
        [login for _, login in chats.table],
        chats.senders,
        chats.texts,
        chats.actions,
        chats.plains,
        list(users),
        whos,
        [(column.present, column.values) for column in tags],
    )
    data = pack(frame)
    if len(data) <= RAW_MAX_BYTES:
        return data
    return bytes(cramjam.zstd.compress(data, level=level))


class Frame:
    """A frame's lines as columns: send times, chats, ``/me`` and plain flags, and the filed-under users
    decoded at once; ids, stored lines and receive times (:meth:`rest`) when first asked (a text answer of
    chat messages never asks)."""

    __slots__ = ("_ordered", "_rest", "_v", "actions", "chats", "plains", "sents", "version", "whos")

    def __init__(
        self,
        sents: list[int],
        chats: list[Chat | None],
        actions: list[bool],
        plains: list[bool],
        whos: list[str | None] | None,
        v: _V2 | _V4 | None,
        rest: tuple[list[bytes], list[str], list[int | None]] | None = None,
        version: int = VERSION,
        ordered: bool = True,
    ) -> None:
        self.sents = sents
        """Each line's ``sent_at`` (epoch ms), in the frame's order."""
        self.chats = chats
        """Each line's ``(channel, user_login, text)``, None where it has no split."""
        self.actions = actions
        self.plains = plains
        self.whos = whos
        """Each line's filed-under user key (None: no user), or None for a frame older than version 4."""
        self.version = version
        self._v = v
        self._rest = rest
        self._ordered = ordered

    def __len__(self) -> int:
        return len(self.sents)

    def rest(self) -> tuple[list[bytes], list[str], list[int | None]]:
        """Each line's message uuid (its 16 bytes), whole stored line and receive time (epoch ms, or None)."""
        if self._rest is None:
            self._rest, self._v = _rest(self.sents, self._v), None
        return self._rest

    def ids(self) -> list[bytes]:
        """Each line's message uuid (its 16 bytes)."""
        return self.rest()[0]

    def window(self, lo: int, hi: int, reverse: bool = False) -> Sequence[int]:
        """The indices of the lines sent within ``[lo, hi)``, in the frame's order (reversed if
        ``reverse``)."""
        sents = self.sents
        if self._ordered:
            start, stop = bisect.bisect_left(sents, lo), bisect.bisect_left(sents, hi)
            return range(stop - 1, start - 1, -1) if reverse else range(start, stop)
        found = [i for i, sent in enumerate(sents) if lo <= sent < hi]
        return found[::-1] if reverse else found

    def lines(self, indices: Sequence[int]) -> list[Line]:
        """The lines at ``indices`` as :data:`Line` (stored line whole, chat split as read back)."""
        ids, stored, received = self.rest()
        whos = self.whos or [None] * len(self.sents)
        out: list[Line] = []
        for i in indices:
            chat = self.chats[i]
            split = None if chat is None else (chat[0], chat[1], chat[2], self.actions[i], self.plains[i])
            out.append((self.sents[i], ids[i], stored[i], received[i], split, whos[i]))
        return out


def _rest(sents: list[int], v: _V2 | _V4 | None) -> tuple[list[bytes], list[str], list[int | None]]:
    if v is None:
        raise FrameError("a frame without its columns")
    try:
        if isinstance(v, _V4):
            raw = v.ids
            if len(raw) != 16 * len(sents):
                raise FrameError("frame with columns of different lengths")
            ids = [raw[i : i + 16] for i in range(0, len(raw), 16)]
        else:
            ids = [uuid.UUID(text).bytes for text in _strings.decode(v.ids)]
        heads, received = _strings.decode(v.heads), _offsets.decode(v.received)
        if isinstance(v, _V5) and v.tags:
            heads = binary_tags.put_back(heads, [binary_tags.Column(*column) for column in v.tags])
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as e:
        raise FrameError(f"not a frame: {e}") from None
    n = len(sents)
    if not n == len(ids) == len(heads) == len(received):
        raise FrameError("frame with columns of different lengths")
    received_ms = [None if r is None else s + r for s, r in zip(sents, received, strict=True)]
    lines = [
        head if text is None else f"{head}{_ACTION}{text}{_ACTION_END}" if action else head + text
        for head, text, action in zip(heads, v.texts, v.actions, strict=True)
    ]
    return ids, lines, received_ms


def _refused(data: bytes | bytearray, error: msgspec.ValidationError) -> FrameError:
    try:
        value = msgspec.msgpack.decode(data)
    except msgspec.DecodeError:
        value = None
    if isinstance(value, list) and value and type(value[0]) is int and value[0] not in range(1, VERSION + 1):
        return FrameError(f"frame of version {value[0]}, this reader knows 1 to {VERSION}")
    return FrameError(f"not a frame: {error}")


def content_size(value: bytes) -> int | None:
    """The decompressed size a Zstandard frame's header gives (its ``Frame_Content_Size``, RFC 8878
    3.1.1.1), or None where the header has none (or is cut short)."""
    if len(value) < 6:
        return None
    descriptor = value[4]
    single_segment = descriptor & 0x20
    width = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    if not width:
        return None
    at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
    field = value[at : at + width]
    if len(field) != width:
        return None
    size = int.from_bytes(field, "little")
    return size + 256 if width == 2 else size


def _decompressed(value: bytes) -> bytes | bytearray:
    """``value`` (Zstandard) decompressed: into a buffer of the size its header gives where it gives one
    (at most :data:`_SIZED_MAX`); else, or where the header's size is not what comes out, by cramjam's
    ``decompress``, which grows its output as it goes: a packed user-month (~140 KB) read again and again
    cost ``chatlog serve`` 330-350 µs that way and 125-140 into its size (about the same either way over
    different months)."""
    size = content_size(value)
    if size is not None and size <= _SIZED_MAX:
        out = bytearray(size)
        try:
            if cramjam.zstd.decompress_into(value, out) == size:
                return out
        except cramjam.DecompressionError:
            pass
    return bytes(cramjam.zstd.decompress(value))


def decode(value: bytes) -> Frame:
    """The lines of a frame (version 1 to 5) as a :class:`Frame`; :class:`FrameError` for anything else."""
    try:
        data = _decompressed(value) if value[:4] == _ZSTD_MAGIC else bytes(value)
        frame = _decoder.decode(data)
    except msgspec.ValidationError as e:
        raise _refused(data, e) from None
    except (cramjam.DecompressionError, msgspec.DecodeError) as e:
        raise FrameError(f"not a frame: {e}") from None
    deltas = frame.deltas
    n = len(deltas)
    sents = list(itertools.accumulate(deltas, initial=frame.first))[1:]
    ordered = min(deltas[1:], default=0) >= 0
    if isinstance(frame, _V1):
        if not n == len(frame.ids) == len(frame.lines) == len(frame.received):
            raise FrameError("frame with columns of different lengths")
        try:
            ids = [uuid.UUID(text).bytes for text in frame.ids]
        except ValueError as e:
            raise FrameError(f"not a frame: {e}") from None
        received_ms = [None if r is None else s + r for s, r in zip(sents, frame.received, strict=True)]
        none = [False] * n
        return Frame(sents, [None] * n, none, none, None, None, (ids, frame.lines, received_ms), 1, ordered)
    texts, actions, senders = frame.texts, frame.actions, frame.senders
    channels, logins = frame.channels, frame.logins
    plains = frame.plains if isinstance(frame, _V3 | _V4) else [False] * n
    if any(len(column) != n for column in (senders, texts, actions, plains)) or len(channels) != len(logins):
        raise FrameError("frame with columns of different lengths")
    whos: list[str | None] | None = None
    if isinstance(frame, _V4):
        users = frame.users
        if len(frame.whos) != n:
            raise FrameError("frame with columns of different lengths")
        try:
            whos = [None if w < 0 else users[w] for w in frame.whos]
        except IndexError:
            raise FrameError("frame with a user not in its table") from None
    if len(channels) == 1:
        channel, login = channels[0], logins[0]
        chats: list[Chat | None] = [None if text is None else (channel, login, text) for text in texts]
    else:
        try:
            if senders and min(senders) < 0:
                raise IndexError
            chats = [
                None if text is None else (channels[i], logins[i], text)
                for i, text in zip(senders, texts, strict=True)
            ]
        except IndexError:
            raise FrameError("frame with a sender not in its table") from None
    version = (
        5 if isinstance(frame, _V5) else 4 if isinstance(frame, _V4) else 3 if isinstance(frame, _V3) else 2
    )
    return Frame(sents, chats, actions, plains, whos, frame, version=version, ordered=ordered)
