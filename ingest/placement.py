"""Placement by load, as pure functions: no sockets, no clock of its own (the caller passes ``now``).

- ``RateTracker``: per-channel message rate, exponentially decayed, measured from lines read.
- ``choose_connection``: where a new JOIN goes (least-loaded by rate, then by channel count, among the
  connections with room under ``irc_channels_per_connection``).
- ``pick_moves`` / ``Rebalancer``: a connection above the rate threshold (``CHATLOG_IRC_MAX_MSGS_PER_CONN``,
  or ``ratio`` times the pool's mean when that is lower) moves its hottest channel that fits on another
  connection; the target must stay below the threshold by a margin (hysteresis), and a channel or a
  source connection moves again only after a cool-down, so nothing flaps.
- ``admit``: the worker capacity (``CHATLOG_INGEST_MAX_CHANNELS``): which wanted channels to join,
  hottest first (unknown rate = 0), channels already joined first (no churn), the rest over capacity.

The pool (ingest/irc/pool.py) executes moves make-before-break: JOIN on the target, PART on the source
only once the server echoed the JOIN. ``chatlog bench placement`` simulates the whole thing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field


class RateTracker:
    """Message rate per channel (msg/s): an exponentially weighted moving average of the rate seen
    in each interval between two ``add`` calls, weighted by ``1 - exp(-dt/tau)`` so that uneven
    intervals weigh by their length. A channel at a steady rate r reads r after a few ``tau`` (no
    bias); a silent channel fades towards 0. State is kept per channel seen and decayed lazily, so
    an ``add`` costs O(channels in it), not O(all channels).
    """

    __slots__ = ("_last", "_rates", "tau_s")

    def __init__(self, tau_s: float = 60.0) -> None:
        if tau_s <= 0:
            raise ValueError("tau_s must be > 0")
        self.tau_s = tau_s
        self._rates: dict[str, tuple[float, float]] = {}  # channel -> (rate at t, t)
        self._last: float | None = None  # time of the last add: counts cover (last, now]

    def add(self, counts: Mapping[str, int], now: float) -> None:
        """Record ``counts[channel]`` messages read since the previous call (a channel absent read
        none). The first call only starts the clock."""
        last, self._last = self._last, now
        if last is None or now <= last:
            return
        dt = now - last
        keep = math.exp(-dt / self.tau_s)
        for ch, n in counts.items():
            self._rates[ch] = (self.rate(ch, last) * keep + (n / dt) * (1.0 - keep), now)

    def rate(self, channel: str, now: float) -> float:
        old = self._rates.get(channel)
        if old is None:
            return 0.0
        return old[0] * math.exp(-max(0.0, now - old[1]) / self.tau_s)

    def rates(self, channels: Iterable[str], now: float) -> dict[str, float]:
        return {ch: self.rate(ch, now) for ch in channels}

    def known(self) -> frozenset[str]:
        return frozenset(self._rates)

    def prune(self, keep: AbstractSet[str], now: float, floor: float = 1e-3) -> None:
        """Forget channels not in ``keep`` whose rate fell below ``floor`` (bounded memory)."""
        for ch in [c for c in self._rates if c not in keep and self.rate(c, now) < floor]:
            del self._rates[ch]


@dataclass(frozen=True, slots=True)
class ConnLoad:
    """One connection as placement sees it: the channels it holds (joined or being joined, moves
    counted at their target) and their summed rate."""

    conn_id: int
    channels: frozenset[str]
    rate: float

    @property
    def count(self) -> int:
        return len(self.channels)


def conn_loads(holdings: Mapping[int, AbstractSet[str]], rates: Mapping[str, float]) -> list[ConnLoad]:
    return [
        ConnLoad(cid, frozenset(chs), sum(rates.get(ch, 0.0) for ch in chs))
        for cid, chs in sorted(holdings.items())
    ]


def choose_connection(loads: Iterable[ConnLoad], capacity: int) -> int | None:
    """The connection for a new JOIN: least rate, then fewest channels, then lowest id, among those
    with fewer than ``capacity`` channels; None when all are full."""
    best: tuple[float, int, int] | None = None
    for c in loads:
        if c.count < capacity:
            key = (c.rate, c.count, c.conn_id)
            if best is None or key < best:
                best = key
    return None if best is None else best[2]


@dataclass(frozen=True, slots=True)
class Move:
    channel: str
    source: int
    target: int
    rate: float


def threshold(loads: Sequence[ConnLoad], ceiling: float, ratio: float) -> float:
    """Rate above which a connection sheds a channel: the ceiling, or ``ratio`` x the mean load of the
    connections when that is lower (``ratio`` 0 = the ceiling only)."""
    if ratio <= 0 or len(loads) < 2:
        return ceiling
    mean = sum(c.rate for c in loads) / len(loads)
    return min(ceiling, ratio * mean)


def pick_moves(
    loads: Sequence[ConnLoad],
    rates: Mapping[str, float],
    *,
    capacity: int,
    ceiling: float,
    now: float,
    ratio: float = 1.25,
    hysteresis: float = 0.1,
    cooldown_s: float = 120.0,
    channel_moved_at: Mapping[str, float] | None = None,
    conn_shed_at: Mapping[int, float] | None = None,
    max_moves: int | None = None,
    stuck: list[int] | None = None,
) -> list[Move]:
    """The moves that bring connections above the threshold back under it.

    Each overloaded connection (hottest first) not in its cool-down moves its hottest channel (not
    in its own cool-down) that fits on another connection: the target keeps room under ``capacity``
    and ends at most ``threshold * (1 - hysteresis)``, so a move never makes a new hot spot and small
    rate swings do not move the channel back. One move per source per call; loads are updated as
    moves are chosen. A source above the ceiling itself (not only above ``ratio`` x the mean: that
    would snowball, each new connection lowering the mean) with a channel that fits on no other
    connection (all full, or too busy) but would on an empty one is appended to ``stuck``: the pool
    then opens a spare connection, so connections follow the load, not only the channel count.
    """
    channel_moved_at = channel_moved_at or {}
    conn_shed_at = conn_shed_at or {}
    if len(loads) < 2 or (max_moves is not None and max_moves <= 0):
        return []
    limit = threshold(loads, ceiling, ratio)
    fit = limit * (1.0 - hysteresis)
    rate_of = {c.conn_id: c.rate for c in loads}
    count_of = {c.conn_id: c.count for c in loads}
    moves: list[Move] = []
    for src in sorted(loads, key=lambda c: (-c.rate, c.conn_id)):
        if rate_of[src.conn_id] <= limit:
            break
        if now - conn_shed_at.get(src.conn_id, -math.inf) < cooldown_s:
            continue
        candidates = sorted(
            (ch for ch in src.channels if now - channel_moved_at.get(ch, -math.inf) >= cooldown_s),
            key=lambda ch: (-rates.get(ch, 0.0), ch),
        )
        for ch in candidates:
            r = rates.get(ch, 0.0)
            if r <= 0:
                break
            targets = [
                cid
                for cid in rate_of
                if cid != src.conn_id and count_of[cid] < capacity and rate_of[cid] + r <= fit
            ]
            if not targets:
                if stuck is not None and src.rate > ceiling and r <= fit and src.conn_id not in stuck:
                    stuck.append(src.conn_id)  # it would fit on a new connection
                continue
            tgt = min(targets, key=lambda cid: (rate_of[cid], count_of[cid], cid))
            moves.append(Move(ch, src.conn_id, tgt, r))
            rate_of[src.conn_id] -= r
            rate_of[tgt] += r
            count_of[src.conn_id] -= 1
            count_of[tgt] += 1
            break
        if max_moves is not None and len(moves) >= max_moves:
            break
    return moves


@dataclass(slots=True)
class Rebalancer:
    """``pick_moves`` with its cool-down memory (when each channel last moved, each connection last
    shed one)."""

    ceiling: float
    cooldown_s: float = 120.0
    ratio: float = 1.25
    hysteresis: float = 0.1
    channel_moved_at: dict[str, float] = field(default_factory=dict)
    conn_shed_at: dict[int, float] = field(default_factory=dict)
    moves: int = 0
    needs_connection: bool = False  # the last plan found a connection above the ceiling with no target

    def plan(
        self,
        loads: Sequence[ConnLoad],
        rates: Mapping[str, float],
        *,
        capacity: int,
        now: float,
        max_moves: int | None = None,
    ) -> list[Move]:
        stuck: list[int] = []
        out = pick_moves(
            loads,
            rates,
            capacity=capacity,
            ceiling=self.ceiling,
            now=now,
            ratio=self.ratio,
            hysteresis=self.hysteresis,
            cooldown_s=self.cooldown_s,
            channel_moved_at=self.channel_moved_at,
            conn_shed_at=self.conn_shed_at,
            max_moves=max_moves,
            stuck=stuck,
        )
        self.needs_connection = bool(stuck) and not out
        for m in out:
            self.channel_moved_at[m.channel] = now
            self.conn_shed_at[m.source] = now
        self.moves += len(out)
        self._forget(now)
        return out

    def _forget(self, now: float) -> None:
        old = now - self.cooldown_s
        if len(self.channel_moved_at) > 1024:
            self.channel_moved_at = {k: t for k, t in self.channel_moved_at.items() if t > old}
        if len(self.conn_shed_at) > 1024:
            self.conn_shed_at = {k: t for k, t in self.conn_shed_at.items() if t > old}


@dataclass(frozen=True, slots=True)
class Admission:
    join: frozenset[str]  # channels to join (or keep)
    over_capacity: frozenset[str]  # wanted, not joined: the worker is full


def admit(
    wanted: AbstractSet[str],
    rates: Mapping[str, float],
    max_channels: int | None,
    joined: AbstractSet[str] = frozenset(),
) -> Admission:
    """Which of ``wanted`` to join with room for ``max_channels`` (None = no limit). Channels already
    joined keep their place (no churn when a hotter one appears), hottest first among them; then the
    others hottest first (an unknown rate counts as 0), ties by name."""
    if max_channels is None or len(wanted) <= max_channels:
        return Admission(frozenset(wanted), frozenset())
    ranked = sorted(wanted, key=lambda ch: (ch not in joined, -rates.get(ch, 0.0), ch))
    take = frozenset(ranked[:max_channels])
    return Admission(take, frozenset(wanted) - take)
