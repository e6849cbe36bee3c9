"""Blocks into one stream of lines: in line order (newest first when reversed), each line once.

A partition's blocks come from a scan in order of their first lines (``first_at``; newest first when
reversed), and blocks may overlap in time: a late line, a replay cut into other batches, a backfill over
logged time. :class:`Merge` takes the blocks as the scan gives them (:meth:`Merge.add`) and gives back the
lines that no block still to come can precede (:meth:`Merge.take`, given that bound: the next block's
``first_at``; reversed, the latest ``last_at`` of the blocks still to come). A line read twice (the same id
at the same time in two blocks) is given once.

The usual partition is blocks one after the other in time (a stream's micro-batches): then one block is
open at a time and its lines are given in its own order without comparing anything. Overlapping blocks are
merged by :func:`store.keys.line_order` (their ids decoded for it). Pure; no driver.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

from store.frame import Frame
from store.keys import line_order

Key = tuple[int, int, int, int]
MakeLine = Callable[[Frame, int, Any], Any]
"""``(frame, index, owner) -> line``: what :meth:`Merge.take` gives for a frame's line."""
MakeRun = Callable[[Frame, Sequence[int], Any], Sequence[Any]]
"""``(frame, indices, owner) -> lines``: what :meth:`Merge.take` gives for a stretch of one block's lines."""


class _Cursor:
    __slots__ = ("frame", "indices", "owner", "pos", "reverse")

    def __init__(self, frame: Frame, indices: Sequence[int], owner: Any, reverse: bool) -> None:
        self.frame, self.indices, self.owner, self.pos, self.reverse = frame, indices, owner, 0, reverse

    def key(self) -> Key:
        i = self.indices[self.pos]
        frame = self.frame
        key = line_order(frame.sents[i], frame.ids()[i])
        if self.reverse:
            return (-key[0], -key[1], -key[2], -key[3])
        return key


class Merge:
    """The merge of one stream of blocks (see the module doc)."""

    def __init__(
        self, lo: int, hi: int, make: MakeLine, *, reverse: bool = False, run: MakeRun | None = None
    ) -> None:
        """``run``: how a stretch of one block's lines is given (default: a list of ``make``'s lines)."""
        self.lo, self.hi, self.reverse = lo, hi, reverse
        self._make = make
        self._run: MakeRun = run or (lambda frame, indices, owner: [make(frame, i, owner) for i in indices])
        self._open: list[_Cursor] = []  # one cursor not yet keyed, or a heap of (key, seq, cursor)
        self._heap: list[tuple[Key, int, _Cursor]] = []
        self._seq = 0
        self._last: Key | None = None

    def add(self, frame: Frame, owner: Any = None) -> None:
        """A block of the scan (in the scan's order), its lines within ``[lo, hi)``."""
        indices = frame.window(self.lo, self.hi, self.reverse)
        if not indices:
            return
        cursor = _Cursor(frame, indices, owner, self.reverse)
        if not self._open and not self._heap:
            self._open.append(cursor)
            return
        for open_cursor in self._open:  # a second block is open: everything is merged by key from now
            self._push(open_cursor)
        self._open = []
        self._push(cursor)

    def _push(self, cursor: _Cursor) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (cursor.key(), self._seq, cursor))

    def _safe(self, sent: int, bound: int | None) -> bool:
        if bound is None:
            return True
        return sent > bound if self.reverse else sent < bound

    def take(self, bound: int | None) -> Sequence[Any]:
        """The lines no block still to come can precede: sent before ``bound`` (after it, reversed); every
        line left when ``bound`` is None (the scan is over). While one block is open they are one run of it
        (``run``)."""
        if self._open:
            cursor = self._open[0]
            indices, sents = cursor.indices, cursor.frame.sents
            start = pos = cursor.pos
            end = len(indices)
            if bound is None:
                pos = end
            elif self.reverse:
                while pos < end and sents[indices[pos]] > bound:
                    pos += 1
            else:
                while pos < end and sents[indices[pos]] < bound:
                    pos += 1
            cursor.pos = pos
            if pos == end:
                self._open = []
                self._last = None
            return self._run(cursor.frame, indices[start:pos], cursor.owner) if pos > start else []
        out: list[Any] = []
        make = self._make
        heap = self._heap
        while heap:
            key, _seq, cursor = heap[0]
            sent = -key[0] if self.reverse else key[0]
            if not self._safe(sent, bound):
                break
            if key != self._last:
                out.append(make(cursor.frame, cursor.indices[cursor.pos], cursor.owner))
                self._last = key
            cursor.pos += 1
            if cursor.pos < len(cursor.indices):
                heapq.heapreplace(heap, (cursor.key(), _seq, cursor))
            else:
                heapq.heappop(heap)
        if len(heap) == 1 and not self._open:  # one block open again: its own order from here
            self._open = [heap.pop()[2]]
        return out

    def __bool__(self) -> bool:
        """Whether lines are held."""
        return bool(self._open or self._heap)
