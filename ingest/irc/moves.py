"""Moves of channels between connections in flight (make-before-break), as plain bookkeeping.

A move starts with a JOIN on the target; while it is pending the channel counts at the target (so the
source does not shed it twice); once the server echoed the JOIN, ``keep`` tells reconcile to PART it on
the source (reconcile.plan's ``keep``). A move ends when the source no longer has the channel (done),
or when the target lost it or its JOIN (failed: the source still logs it; nothing was missed).
"""

from __future__ import annotations

from collections.abc import Iterable

from ingest.irc.reconcile import ConnState, ConnView
from ingest.placement import Move

_LIVE = (ConnState.READY, ConnState.DRAINING)


class MoveBook:
    def __init__(self) -> None:
        self.inflight: dict[str, Move] = {}
        self.done = 0
        self.failed = 0

    def start(self, move: Move) -> None:
        self.inflight[move.channel] = move

    def keep(self) -> dict[str, int]:
        """Channel -> the connection that keeps it once both have it joined (the target)."""
        return {ch: m.target for ch, m in self.inflight.items()}

    def settle(self, views: Iterable[ConnView]) -> None:
        """Forget finished moves (source parted it) and failed ones (target lost the JOIN)."""
        if not self.inflight:
            return
        by_id = {c.conn_id: c for c in views if c.state in _LIVE}
        for ch, m in list(self.inflight.items()):
            tgt, src = by_id.get(m.target), by_id.get(m.source)
            if tgt is None or (ch not in tgt.pending and ch not in tgt.joined):
                del self.inflight[ch]
                self.failed += 1
            elif src is None or ch not in src.joined:
                del self.inflight[ch]
                self.done += 1

    def holdings(self, views: Iterable[ConnView]) -> dict[int, set[str]]:
        """READY connection -> the channels it holds (joined and not parting, or pending), a channel in
        flight counted at its target only."""
        out = {
            c.conn_id: set((c.joined - c.parting) | c.pending) for c in views if c.state is ConnState.READY
        }
        for ch, m in self.inflight.items():
            if m.source in out and m.target in out:
                out[m.source].discard(ch)
        return out
