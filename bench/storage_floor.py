"""How small one stored copy of a line can get, measured on packed user-months (issue 35's storage goal).

A Twitch chat line carries values that are random: its message id, the ``client-nonce`` of web chat, the
ids of a reply's parent and thread (``reply-parent-msg-id``, ...). No compressor makes 16 random bytes
smaller than 16 bytes, whatever their order or neighbours. The rest of a line (its text, its other tags,
its time) compresses, and best where lines of one user follow each other, as in a packed user-month.

So the floor of one copy is, per line: 16 bytes per random value (as binary, not text), plus each packed
month's texts, its lines without those values and texts, and its send-time deltas, each column compressed
alone with Zstandard at level :data:`LEVEL` (the strongest at hand; chatlog writes level 9). A layout that
stores every line twice (chatlog's channel days and user months, justlog's channel and user files) cannot
be smaller than twice the random values, plus twice whatever the rest takes in its better order.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import cramjam
import msgspec

from schemas.packed_month import Frame, PackError, unpack_frame

LEVEL: Final = 19
RANDOM_BYTES: Final = 16
"""Bytes of randomness in a version-4 uuid (122 bits, rounded up) and in a 32-hex-digit nonce."""
_UUID_TEXT: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NONCE: Final = re.compile(r"(?<=client-nonce=)[0-9a-f]{32}(?=[; ])")


def _zstd(text: str) -> int:
    return len(cramjam.zstd.compress(text.encode(), level=LEVEL))


def random_values(line: str) -> tuple[str, int]:
    """``line`` without its random values (uuids in canonical text, a ``client-nonce`` of 32 hex digits) and
    how many it held."""
    line, uuids = _UUID_TEXT.subn("", line)
    line, nonces = _NONCE.subn("", line)
    return line, uuids + nonces


@dataclass
class Floor:
    """The parts of one copy's floor over the packed months added (:meth:`add`), in bytes."""

    rows: int = 0
    random: int = 0
    """:data:`RANDOM_BYTES` per random value: each row's message id and those in its line."""
    texts: int = 0
    """The chat messages' texts, one compressed column per month."""
    rest: int = 0
    """The lines without their random values and texts, one compressed column per month."""
    times: int = 0
    """The send-time deltas (msgpack), one compressed column per month."""

    def add(self, frame: Frame) -> None:
        """Count one packed month (its stored lines: without their id and send-time values)."""
        ids, lines, _ = frame.rest()
        texts, rests = [], []
        randoms = 0
        for mid, line, chat in zip(ids, lines, frame.chats, strict=True):
            text = chat[2] if chat is not None else ""
            head = line[: len(line) - len(text)] if text and line.endswith(text) else line
            rest, found = random_values(head)
            randoms += found + (1 if _UUID_TEXT.fullmatch(mid) else 0)
            texts.append(text)
            rests.append(rest)
        sents = frame.sents
        deltas = [b - a for a, b in itertools.pairwise(sents[:1] + sents)]  # the first 0
        self.rows += len(ids)
        self.random += RANDOM_BYTES * randoms
        self.texts += _zstd("\n".join(texts))
        self.rest += _zstd("\n".join(rests))
        self.times += len(cramjam.zstd.compress(msgspec.msgpack.encode(deltas), level=LEVEL))

    def report(self) -> dict[str, Any]:
        """Bytes per row of each part, of one copy and of two."""
        n = max(self.rows, 1)
        one = (self.random + self.texts + self.rest + self.times) / n
        return {
            "rows": self.rows,
            "level": LEVEL,
            "random_values_b": round(self.random / n, 1),
            "texts_b": round(self.texts / n, 1),
            "rest_b": round(self.rest / n, 1),
            "send_times_b": round(self.times / n, 1),
            "one_copy_b": round(one, 1),
            "two_copies_b": round(2 * one, 1),
            "two_copies_random_only_b": round(2 * self.random / n, 1),
        }


def floor_of(frames: Iterable[bytes]) -> dict[str, Any]:
    """:meth:`Floor.report` over packed months (a frame that is not one is counted and skipped)."""
    floor = Floor()
    unreadable = 0
    for value in frames:
        try:
            floor.add(unpack_frame(value))
        except PackError:
            unreadable += 1
    return {**floor.report(), "unreadable_frames": unreadable}


def keyspace_floor(session: Any, keyspace: str) -> dict[str, Any]:
    """:func:`floor_of` every packed month of ``keyspace``'s user table."""
    query = f"SELECT DISTINCT channel_key, user_key, period, packed FROM {keyspace}.chat_by_user"
    rows = session.execute(query, timeout=600)
    return floor_of(row.packed for row in rows if row.packed is not None)
