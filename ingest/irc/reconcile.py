"""Declarative channel membership as pure functions: what the pool wants vs. what the server confirmed
→ the actions that close the gap (JOIN x on connection n, PART y, open/close connections).

No sockets and no clock here; the pool feeds in its state and executes the plan. Rules:

- A channel confirmed (JOIN echoed) or pending on a READY connection is never joined again.
- A channel only on a DRAINING connection (the server sent RECONNECT) is joined on another one;
  the draining connection closes once all its wanted channels are confirmed elsewhere
  (make-before-break). Until then both deliver lines; duplicates are removed downstream by id.
- At most ``capacity`` channels (joined + pending) per connection; JOINs only up to ``join_budget``
  (the rate limiter's free slots); channels a timed-out JOIN moved away only go to connections with
  an id of at least ``fresh_after[channel]`` (a fresh connection).
- Unwanted or duplicate channels on READY connections are PARTed (the connection ``keep`` names keeps
  a duplicate: the target of a move, so a move is make-before-break; else the lowest connection id).
  Idle connections close once every wanted channel is covered.
- With ``rates`` (msg/s per channel, ingest/placement.py), homeless channels are joined hottest first,
  each on the least-loaded connection by rate, then by count; without, first-fit in connection order.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field


class ConnState(enum.StrEnum):
    CONNECTING = "connecting"  # TCP, TLS or IRC registration under way
    READY = "ready"  # registered (001 received); JOINs may be sent
    DRAINING = "draining"  # the server asked us to RECONNECT; still delivering, being replaced
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class ConnView:
    """What reconcile needs to know about one connection (sets are read, never changed)."""

    conn_id: int
    state: ConnState
    joined: AbstractSet[str] = frozenset()  # JOIN echoed by the server
    pending: AbstractSet[str] = frozenset()  # JOIN sent, no echo yet
    parting: AbstractSet[str] = frozenset()  # PART sent, no echo yet (still in ``joined``)

    @property
    def load(self) -> int:
        return len(self.joined) + len(self.pending)


@dataclass(frozen=True, slots=True)
class Plan:
    joins: list[tuple[int, str]] = field(default_factory=list)  # (conn_id, channel), in order
    parts: list[tuple[int, str]] = field(default_factory=list)
    open: int = 0  # new connections to open
    close: list[int] = field(default_factory=list)  # conn_ids to close (QUIT)
    homeless: int = 0  # wanted channels neither joined nor pending on a READY connection


@dataclass(slots=True)
class _Slot:
    conn_id: int
    free: int
    ready: bool
    rate: float = 0.0


@dataclass(slots=True)
class _Assigned:
    """What an assignment collects: the JOINs to send now, the conn_ids given a channel, and the new
    connections needed for the channels no slot had room for."""

    capacity: int
    join_budget: int
    joins: list[tuple[int, str]] = field(default_factory=list)
    used: set[int] = field(default_factory=set)
    new_conns: int = 0
    new_free: int = 0  # room left on the last new connection counted

    def take(self, slot: _Slot, ch: str) -> None:
        """``ch`` goes to ``slot``: a JOIN now when the connection is READY and the budget allows."""
        slot.free -= 1
        self.used.add(slot.conn_id)
        if slot.ready and len(self.joins) < self.join_budget:
            self.joins.append((slot.conn_id, ch))

    def no_slot(self) -> None:
        """No slot has room: the channel takes one on a new connection (one more when the last is full)."""
        if self.new_free == 0:
            self.new_conns += 1
            self.new_free = self.capacity
        self.new_free -= 1

    def result(self) -> tuple[list[tuple[int, str]], set[int], int]:
        return self.joins, self.used, self.new_conns


def plan(
    wanted: AbstractSet[str],
    conns: Iterable[ConnView],
    *,
    capacity: int,
    join_budget: int,
    horizon: int | None = None,
    fresh_after: Mapping[str, int] | None = None,
    blocked: AbstractSet[str] = frozenset(),
    max_open: int | None = None,
    rates: Mapping[str, float] | None = None,
    keep: Mapping[str, int] | None = None,
    spare: int = 0,
) -> Plan:
    """The actions that bring ``conns`` towards ``wanted``.

    ``horizon`` bounds how many homeless channels are considered for opening connections in one go
    (the limiter's window: no point opening connections faster than JOINs can fill them); ``blocked``
    channels (in failure backoff) are left alone; ``max_open`` caps the connections to open;
    ``rates`` makes the joins load-aware; ``keep`` names the connection that keeps a duplicate;
    ``spare`` idle connections are kept (or opened) for moves when every channel is covered.
    """
    fresh_after = fresh_after or {}
    views = sorted(conns, key=lambda c: c.conn_id)
    ready = [c for c in views if c.state is ConnState.READY]
    draining = [c for c in views if c.state is ConnState.DRAINING]
    connecting = [c for c in views if c.state is ConnState.CONNECTING]

    parts: list[tuple[int, str]] = []
    covered: set[str] = set()  # joined (not parting) or pending on a READY connection
    confirmed: set[str] = set()  # joined (not parting) on a READY connection
    owners = _owners(keep, ready) if keep else {}
    for c in ready:
        staying = c.joined - c.parting if c.parting else c.joined
        drop = (staying - wanted) | (staying & confirmed)
        if owners:
            drop |= {ch for ch in staying if owners.get(ch, c.conn_id) != c.conn_id}
        parts.extend((c.conn_id, ch) for ch in sorted(drop))
        kept = staying - drop if drop else staying
        confirmed |= kept
        covered |= kept
        covered |= c.pending

    homeless = wanted - covered
    if blocked:
        homeless -= blocked
    ordered = _prioritised(homeless, draining, rates)
    if horizon is not None:
        ordered = ordered[: max(horizon, join_budget, 0)]

    if rates is None:
        slots = [_Slot(c.conn_id, capacity - c.load, True) for c in ready]
    else:
        slots = [_Slot(c.conn_id, capacity - c.load, True, _held_rate(c, rates)) for c in ready]
    slots += [_Slot(c.conn_id, capacity, False) for c in connecting]
    slots.sort(key=lambda s: s.conn_id)
    if rates is None:
        joins, used, new_conns = _assign(ordered, slots, capacity, join_budget, fresh_after)
    else:
        joins, used, new_conns = _assign_by_load(ordered, slots, capacity, join_budget, fresh_after, rates)

    close = [c.conn_id for c in draining if (c.joined & wanted) <= confirmed]
    if not homeless:
        idle = [c.conn_id for c in ready if c.load == 0 and c.conn_id not in used]
        idle += [c.conn_id for c in connecting if c.conn_id not in used]
        close += idle[spare:]
        new_conns += max(0, spare - len(idle))
    opened = new_conns if max_open is None else max(0, min(new_conns, max_open))
    return Plan(joins, parts, opened, sorted(close), len(homeless))


def _owners(keep: Mapping[str, int], ready: Sequence[ConnView]) -> dict[str, int]:
    """Channel -> the connection that keeps it, where that connection is READY and has it joined."""
    by_id = {c.conn_id: c for c in ready}
    out: dict[str, int] = {}
    for ch, cid in keep.items():
        c = by_id.get(cid)
        if c is not None and ch in c.joined and ch not in c.parting:
            out[ch] = cid
    return out


def _held_rate(c: ConnView, rates: Mapping[str, float]) -> float:
    held = (c.joined - c.parting) | c.pending if c.parting else c.joined | c.pending
    return sum(rates.get(ch, 0.0) for ch in held)


def _prioritised(
    homeless: AbstractSet[str], draining: Sequence[ConnView], rates: Mapping[str, float] | None = None
) -> list[str]:
    """Channels about to lose their (draining) connection first, then the rest; each sorted (by
    name, or hottest first when ``rates`` are given)."""
    if not homeless:
        return []

    def order(chs: Iterable[str]) -> list[str]:
        if rates is None:
            return sorted(chs)
        return sorted(chs, key=lambda ch: (-rates.get(ch, 0.0), ch))

    moving: set[str] = set()
    for c in draining:
        moving |= c.joined & homeless
    if not moving:
        return order(homeless)
    return order(moving) + order(homeless - moving)


def _assign_by_load(
    ordered: Sequence[str],
    slots: list[_Slot],
    capacity: int,
    join_budget: int,
    fresh_after: Mapping[str, int],
    rates: Mapping[str, float],
) -> tuple[list[tuple[int, str]], set[int], int]:
    """Like ``_assign``, but each channel goes to the least-loaded slot with room (by rate, then by
    channels held, then id: ``placement.choose_connection``); slots gain the channel's rate. READY
    connections come first (a JOIN now beats a better place later: a move can fix the place)."""
    out = _Assigned(capacity, join_budget)
    for ch in ordered:
        min_id = fresh_after.get(ch, 0)
        slot: _Slot | None = None
        best: tuple[bool, float, int, int] | None = None
        for s in slots:
            if s.free > 0 and s.conn_id >= min_id:
                key = (not s.ready, s.rate, capacity - s.free, s.conn_id)
                if best is None or key < best:
                    best, slot = key, s
        if slot is None:
            out.no_slot()
            continue
        slot.rate += rates.get(ch, 0.0)
        out.take(slot, ch)
    return out.result()


def _assign(
    ordered: Sequence[str],
    slots: list[_Slot],
    capacity: int,
    join_budget: int,
    fresh_after: Mapping[str, int],
) -> tuple[list[tuple[int, str]], set[int], int]:
    """First-fit in connection order. Returns (joins to send now, conn_ids given a channel, new
    connections needed). Slots of CONNECTING connections and slots beyond the JOIN budget are only
    reserved, so that the number of connections to open is right."""
    out = _Assigned(capacity, join_budget)
    cursor = 0  # first slot that may have room; free only ever decreases
    for ch in ordered:
        min_id = fresh_after.get(ch, 0)
        slot: _Slot | None = None
        if min_id == 0:
            while cursor < len(slots) and slots[cursor].free <= 0:
                cursor += 1
            if cursor < len(slots):
                slot = slots[cursor]
        else:
            slot = next((s for s in slots if s.free > 0 and s.conn_id >= min_id), None)
        if slot is None:
            out.no_slot()
            continue
        out.take(slot, ch)
    return out.result()


@dataclass(frozen=True, slots=True)
class PendingJoin:
    sent_at: float  # monotonic time of the last JOIN for this channel on this connection
    attempts: int  # JOINs sent for it on this connection (1 = the first)


def join_timeouts(
    pending_by_conn: Mapping[int, Mapping[str, PendingJoin]],
    now: float,
    *,
    timeout: float,
    retries: int,
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The JOIN-ack watchdog: (JOINs to resend on the same connection, channels to move to a fresh
    connection). A JOIN is retried ``retries`` times after ``timeout`` s without echo, then moved."""
    retry: list[tuple[int, str]] = []
    move: list[tuple[int, str]] = []
    for conn_id, pending in pending_by_conn.items():
        for ch, p in pending.items():
            if now - p.sent_at >= timeout:
                (retry if p.attempts <= retries else move).append((conn_id, ch))
    return retry, move
