"""The IRC connection pool of one ingester process.

``set_wanted`` says which channels to log; ``run`` keeps reconciling the wanted set against what the
server confirmed, over up to K channels per connection, under the JOIN rate limit, with keepalive,
reconnect backoff, make-before-break on RECONNECT and a JOIN-ack watchdog. Chat lines go to
``on_lines`` in batches straight from the socket reads; the planning lives in ``reconcile``.

Placement by load (ingest/placement.py): lines are counted per channel to measure each channel's
message rate (decayed); new JOINs go to the least-loaded connection; a connection above the rate
threshold moves its hottest channel that fits elsewhere, make-before-break (ingest/irc/moves.py); with
``ingest_max_channels`` the pool joins at most that many channels, hottest first, and reports the rest
as ``over_capacity``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import ssl
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

from core.logins import login_of
from ingest.irc.connection import IrcConnection
from ingest.irc.login import login_from_settings
from ingest.irc.metrics import PoolMetrics
from ingest.irc.moves import MoveBook
from ingest.irc.ratelimit import Backoff, SlidingWindowLimiter
from ingest.irc.read_tick import ReadTick
from ingest.irc.reconcile import ConnState, ConnView, join_timeouts, plan
from ingest.irc.settings import PoolSettings
from ingest.irc.stats import PoolStats
from ingest.irc.troubles import JoinTroubles
from ingest.placement import RateTracker, Rebalancer, admit, conn_loads

log = logging.getLogger(__name__)

OnLines = Callable[[list[str], int], None]
_VALID_CHANNEL = re.compile(r"[^\s,\x00\x07#][^\s,\x00\x07]{0,62}")
_STABLE_S = 30.0  # a connection that was READY this long before it was lost resets the backoff
_CLOSE_WAIT_S = 5.0
RATE_TAU_S = 60.0  # channel message rates are decayed over about this long
_PLACE_EVERY_S = 1.0  # rates folded, moves planned this often
_SPARE_HOLD_S = 30.0  # a spare connection opened for moves stays this long without one


class IrcPool:
    """IRC connections of one process; see the module doc. All methods run on the event loop."""

    def __init__(
        self,
        settings: PoolSettings,
        on_lines: OnLines,
        *,
        worker_id: str,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.worker_id = worker_id
        self._on_lines = on_lines
        self._clock = clock
        self._rng = rng or random.Random()
        self._login = login_from_settings(settings, worker_id, self._rng, settings.irc_nick_max_len)
        self._limiter = SlidingWindowLimiter(settings.irc_join_rate, settings.irc_join_window_s, clock)
        self._backoff = Backoff(
            settings.irc_reconnect_backoff_min_s, settings.irc_reconnect_backoff_max_s, self._rng
        )
        self._conns: dict[int, IrcConnection] = {}  # not CLOSED
        self._leaving: dict[int, IrcConnection] = {}  # CLOSED, socket not closed yet
        self._openers: dict[int, asyncio.Task[None]] = {}
        self._next_id = 1
        self._next_open_at = 0.0
        self._wanted_input: AbstractSet[str] = frozenset()
        self._wanted: frozenset[str] = frozenset()
        self._active: frozenset[str] = frozenset()  # wanted and within ingest_max_channels
        self._over: frozenset[str] = frozenset()  # wanted, over capacity
        self._tracker = RateTracker(RATE_TAU_S)
        self._rates: dict[str, float] = {}  # of wanted and held channels, refreshed every second
        self._placed_at = float("-inf")
        self._rebalancer = Rebalancer(
            settings.irc_max_msgs_per_conn, settings.irc_move_cooldown_s, settings.irc_rebalance_ratio
        )
        self._moves = MoveBook()
        self._spare_until = float("-inf")  # keep a spare connection open for moves until then
        self._msgs_per_s = 0.0
        self._max_conn_msgs_per_s = 0.0
        self._cpu_mark = (time.process_time(), 0)
        self._cpu_per_msg = 0.0
        self._invalid_seen: set[str] = set()
        self._troubles = JoinTroubles(settings.irc_join_failure_backoff_s, clock)
        self._homeless = 0
        self._dirty = True  # something changed since the last plan
        self.membership_version = 0
        """Grows at every JOIN/PART/KICK echo and connection change: ``confirmed`` may differ only then."""
        self.membership_moved = asyncio.Event()
        """Set when ``membership_version`` grows; whoever waits for it clears it once it has looked."""
        self._published_at = float("-inf")
        self._counts: dict[str, int] = defaultdict(int)
        self._bytes_closed = 0
        self._nick_collisions_closed = 0
        self._decode_errors_closed = 0
        self._metrics = PoolMetrics(worker_id)
        self._wake = asyncio.Event()
        self._closing = False
        self._paused = False
        self._running = False
        self._error: BaseException | None = None
        s = settings
        self._tick_s = max(0.02, min(0.5, s.irc_join_ack_timeout_s / 4, s.irc_ping_timeout_s / 4))
        self._ssl = ssl.create_default_context() if s.irc_tls else None
        self._read_tick = ReadTick(s.irc_read_interval_ms / 1000) if s.irc_read_interval_ms > 0 else None

    # ---- public interface -------------------------------------------------------------------------
    def set_wanted(self, channels: AbstractSet[str]) -> None:
        """Declare the channels to log (logins, lower case, without '#'); cheap when unchanged."""
        if channels is self._wanted_input or channels == self._wanted_input:
            return
        self._wanted_input = frozenset(channels)
        clean = set()
        for raw in self._wanted_input:
            ch = login_of(raw)
            if _VALID_CHANNEL.fullmatch(ch):
                clean.add(ch)
            elif raw not in self._invalid_seen:
                self._invalid_seen.add(raw)
                log.warning("irc pool: ignoring invalid channel name %r", raw)
        self._wanted = frozenset(clean)
        self._admit()
        self._poke()

    def _admit(self) -> None:
        """Apply the worker capacity (``ingest_max_channels``): hottest first, joined ones kept."""
        cap = self.settings.ingest_max_channels
        if cap is None or len(self._wanted) <= cap:
            self._active, self._over = self._wanted, frozenset()
            return
        a = admit(self._wanted, self._rates, cap, self.confirmed)
        if a.over_capacity != self._over:
            log.warning(
                "irc pool: %d channels wanted, capacity %d (CHATLOG_INGEST_MAX_CHANNELS): %d over capacity",
                len(self._wanted), cap, len(a.over_capacity),
            )  # fmt: skip
        self._active, self._over = a.join, a.over_capacity

    @property
    def wanted(self) -> frozenset[str]:
        return self._wanted

    @property
    def over_capacity(self) -> frozenset[str]:
        """Wanted channels this worker does not join: it is at ``ingest_max_channels``."""
        return self._over

    def rates(self) -> dict[str, float]:
        """Measured message rate (msg/s, decayed) per wanted or held channel, as of the last second."""
        return dict(self._rates)

    @property
    def confirmed(self) -> frozenset[str]:
        """Channels whose JOIN the server echoed on a live (READY or DRAINING) connection."""
        out: set[str] = set()
        for conn in self._conns.values():
            if conn.state in (ConnState.READY, ConnState.DRAINING):
                out |= conn.joined
        return frozenset(out)

    def stats(self) -> PoolStats:
        by_state: dict[ConnState, int] = defaultdict(int)
        for conn in self._conns.values():
            by_state[conn.state] += 1
        live = [*self._conns.values(), *self._leaving.values()]
        c = self._counts
        return PoolStats(
            connections=len(self._conns),
            connections_connecting=by_state[ConnState.CONNECTING],
            connections_ready=by_state[ConnState.READY],
            connections_draining=by_state[ConnState.DRAINING],
            wanted=len(self._wanted),
            confirmed=len(self.confirmed),
            pending_joins=sum(len(x.pending) for x in self._conns.values() if x.state is ConnState.READY),
            homeless=self._homeless,
            blocked=len(self._troubles.blocked),
            reconnects=c["reconnects"],
            join_timeouts=c["join_timeouts"],
            joins_sent=c["joins_sent"],
            parts_sent=c["parts_sent"],
            lines_read=c["lines_read"],
            bytes_read=self._bytes_closed + sum(x.bytes_read for x in live),
            nick_collisions=self._nick_collisions_closed + sum(x.nick_collisions for x in live),
            decode_errors=self._decode_errors_closed + sum(x.decode_errors for x in live),
            over_capacity=len(self._over),
            msgs_per_s=round(self._msgs_per_s, 1),
            max_conn_msgs_per_s=round(self._max_conn_msgs_per_s, 1),
            moves=self._rebalancer.moves,
            moves_failed=self._moves.failed,
            cpu_s_per_msg=self._cpu_per_msg,
        )

    async def run(self) -> None:
        """Reconcile until :meth:`close`; raises what ``on_lines`` raised, if it did."""
        if self._running:
            raise RuntimeError("IrcPool.run is already running")
        self._running = True
        try:
            while not self._closing:
                self._wake.clear()
                self._tick()
                with contextlib.suppress(TimeoutError):  # not wait_for: 3.11's can swallow a cancel
                    async with asyncio.timeout(self._tick_s):
                        await self._wake.wait()
        except asyncio.CancelledError:
            self._abort_all()
            raise
        finally:
            self._running = False
        if self._error is not None:
            raise self._error

    async def close(self, *, part: bool = True) -> None:
        """PART (if ``part``) and QUIT every connection; waits up to a few seconds for them to close."""
        self._closing = True
        self._wake.set()
        for task in self._openers.values():
            task.cancel()
        for conn in list(self._conns.values()):
            conn.close("chatlog shutting down", part=part)
        conns = list(self._leaving.values())
        if conns:
            await asyncio.wait([conn.closed for conn in conns], timeout=_CLOSE_WAIT_S)
        self._abort_all()
        if self._read_tick is not None:
            self._read_tick.close()
        self._metrics.publish(self.stats())

    def pause_reading(self) -> None:
        """Back-pressure for the caller: stop reading every socket (new ones start paused). The
        server buffers meanwhile and may drop a connection paused for long; keepalive waits."""
        self._paused = True
        for conn in self._conns.values():
            conn.pause_reading()

    def resume_reading(self) -> None:
        self._paused = False
        for conn in self._conns.values():
            conn.resume_reading()

    # ---- hooks from connections -------------------------------------------------------------------
    def deliver(self, lines: list[str], received_at_ms: int) -> None:
        self._counts["lines_read"] += len(lines)
        if self._error is not None:
            return
        try:
            self._on_lines(lines, received_at_ms)
        except Exception as exc:  # a bug in the caller: stop the pool, run() re-raises it
            log.exception("irc pool: on_lines failed; closing the pool")
            self._error = exc
            self._closing = True
            self._wake.set()

    def membership_changed(self, conn: IrcConnection) -> None:
        """A JOIN/PART/KICK echo: reconcile again at the next tick (no wake-up per echo)."""
        del conn
        self._dirty = True
        self._membership_moved()

    def _membership_moved(self) -> None:
        self.membership_version += 1
        self.membership_moved.set()

    def _poke(self) -> None:
        self._dirty = True
        self._wake.set()

    def connection_ready(self, conn: IrcConnection) -> None:
        self._membership_moved()
        took = (conn.ready_at or conn.created_at) - conn.created_at
        log.info("irc conn %d connected as %s (registered in %.2f s)", conn.conn_id, conn.nick, took)
        self._poke()

    def connection_closed(self, conn: IrcConnection, reason: str, kind: str, failure: bool) -> None:
        self._membership_moved()
        self._conns.pop(conn.conn_id, None)
        self._leaving[conn.conn_id] = conn  # until its socket is closed
        conn.closed.add_done_callback(lambda _f: self._forget_connection(conn))
        if self._closing:
            return
        channels = len(conn.joined) + len(conn.pending)
        if failure:
            now = self._clock()
            self._counts["reconnects"] += 1
            self._metrics.reconnect(kind)
            if conn.ready_at is not None and now - conn.ready_at >= _STABLE_S:
                self._backoff.reset()
            delay = self._backoff.failure()
            self._next_open_at = max(self._next_open_at, now + delay)
            log.warning(
                "irc conn %d (%s) lost: %s; %d channels to re-join; reconnecting in %.1f s (failure %d)",
                conn.conn_id, conn.nick, reason, channels, delay, self._backoff.failures,
            )  # fmt: skip
        else:
            log.info("irc conn %d (%s) closed: %s", conn.conn_id, conn.nick, reason)
        self._poke()

    def _forget_connection(self, conn: IrcConnection) -> None:
        if self._leaving.pop(conn.conn_id, None) is not None:
            self._bytes_closed += conn.bytes_read
            self._nick_collisions_closed += conn.nick_collisions
            self._decode_errors_closed += conn.decode_errors

    def reconnect_requested(self, conn: IrcConnection) -> None:
        self._counts["reconnects"] += 1
        self._metrics.reconnect("reconnect_requested")
        log.info(
            "irc conn %d (%s): server asked to RECONNECT; moving %d channels to a new connection first",
            conn.conn_id, conn.nick, len(conn.joined),
        )  # fmt: skip
        self._poke()

    def join_refused(self, conn: IrcConnection, channel: str, reason: str) -> None:
        delay = self._troubles.block(channel)
        log.warning(
            "irc conn %d: JOIN #%s refused (%s); next try in %.0f s", conn.conn_id, channel, reason, delay
        )
        self._poke()

    # ---- reconcile loop ---------------------------------------------------------------------------
    def _tick(self) -> None:
        if self._closing:
            return
        now = self._clock()
        s = self.settings
        for conn in list(self._conns.values()):
            conn.check(
                now,
                ping_interval=s.irc_ping_interval_s,
                ping_timeout=s.irc_ping_timeout_s,
                connect_timeout=s.irc_connect_timeout_s,
            )
            if conn.state is ConnState.DRAINING and now - (conn.drain_since or now) >= s.irc_drain_timeout_s:
                conn.close(f"drained for {s.irc_drain_timeout_s:g} s after RECONNECT")
        self._watchdog(now)
        if self._troubles.settle(self._active, lambda: self.confirmed):
            self._dirty = True
        if now - self._placed_at >= _PLACE_EVERY_S:
            self._place(now)
        if self._dirty or self._homeless:
            self._reconcile(now)
        if now - self._published_at >= 1.0:
            self._published_at = now
            self._metrics.publish(self.stats())

    def _views(self) -> list[ConnView]:
        return [
            ConnView(c.conn_id, c.state, c.joined, c.pending.keys(), c.parting) for c in self._conns.values()
        ]

    def _place(self, now: float) -> None:
        """Fold the lines counted per channel into the rates; settle and plan moves (make-before-break:
        the JOIN is sent here, the PART by reconcile once the JOIN is echoed)."""
        elapsed = now - self._placed_at
        self._placed_at = now
        held: dict[str, int] = {}
        for conn in [*self._conns.values(), *self._leaving.values()]:
            for raw, n in conn.take_line_counts().items():
                ch = raw.lower()
                if ch in conn.joined or ch in self._wanted:  # during a move both connections
                    held[ch] = max(held.get(ch, 0), n)  # read the same lines: count them once
        self._tracker.add(held, now)
        self._tracker.prune(self._wanted, now)
        views = self._views()
        self._moves.settle(views)
        holdings = self._moves.holdings(views)
        channels = set(self._wanted)
        for chs in holdings.values():
            channels |= chs
        self._rates = self._tracker.rates(channels, now)
        loads = conn_loads(holdings, self._rates)
        self._msgs_per_s = sum(c.rate for c in loads)
        self._max_conn_msgs_per_s = max((c.rate for c in loads), default=0.0)
        self._measure_cpu(elapsed)
        if self.settings.ingest_max_channels is not None:
            before = self._active
            self._admit()
            if self._active != before:
                self._dirty = True
        if self._homeless or self._closing:
            return  # joining what is not covered comes first
        budget = self._limiter.available()
        moves = self._rebalancer.plan(
            loads, self._rates, capacity=self.settings.irc_channels_per_connection, now=now, max_moves=budget
        )
        for m in moves:
            target = self._conns.get(m.target)
            if target is None or target.state is not ConnState.READY or not self._limiter.try_acquire(1):
                continue
            target.send_joins([m.channel], now)
            self._counts["joins_sent"] += 1
            self._moves.start(m)
            self._metrics.move()
            log.info(
                "irc pool: moving #%s (%.1f msg/s) from conn %d to conn %d (make-before-break)",
                m.channel, m.rate, m.source, m.target,
            )  # fmt: skip
        if self._rebalancer.needs_connection and len(self._conns) < self.settings.irc_max_connections:
            self._spare_until = now + _SPARE_HOLD_S  # every lighter connection is full: open one
            self._dirty = True
        if moves:
            self._dirty = True

    def _measure_cpu(self, elapsed: float) -> None:
        cpu0, lines0 = self._cpu_mark
        lines = self._counts["lines_read"]
        if lines - lines0 >= 1000 or elapsed > 10:
            cpu = time.process_time()
            if lines > lines0:
                self._cpu_per_msg = (cpu - cpu0) / (lines - lines0)
            self._cpu_mark = (cpu, lines)

    def _reconcile(self, now: float) -> None:
        s = self.settings
        views = self._views()
        open_room = s.irc_max_connections - len(views)
        p = plan(
            self._active,
            views,
            capacity=s.irc_channels_per_connection,
            join_budget=self._limiter.available(),
            horizon=self._limiter.limit,
            fresh_after=self._troubles.fresh_after,
            blocked=self._troubles.blocked.keys(),
            max_open=open_room if now >= self._next_open_at else 0,
            rates=self._rates,
            keep=self._moves.keep(),
            spare=1 if now < self._spare_until else 0,
        )
        self._homeless = p.homeless
        self._dirty = bool(p.joins or p.parts or p.open or p.close)
        for conn_id, chs in _by_conn(p.parts).items():
            self._conns[conn_id].send_parts(chs)
            self._counts["parts_sent"] += len(chs)
        for conn_id, chs in _by_conn(self._within_capacity(p.joins)).items():
            granted = self._limiter.try_acquire(len(chs))
            self._conns[conn_id].send_joins(chs[:granted], now)
            self._counts["joins_sent"] += granted
        for conn_id in p.close:
            conn = self._conns[conn_id]
            why = "replaced after RECONNECT" if conn.state is ConnState.DRAINING else "no longer needed"
            conn.close(why, part=conn.state is ConnState.READY)
        for _ in range(p.open):
            self._open_connection()

    def _within_capacity(self, joins: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The planned JOINs that keep the worker within ``ingest_max_channels`` at the server: a channel
        held already (joined, pending, or parted without an answer yet, on any connection) may be joined
        again (a move, a RECONNECT's new connection); a new one only while fewer than the capacity are
        held. A worker handed other channels joins them as the server answers its PARTs."""
        cap = self.settings.ingest_max_channels
        if cap is None or not joins:
            return joins
        held: set[str] = set()
        for conn in [*self._conns.values(), *self._leaving.values()]:
            held |= conn.joined
            held |= conn.pending.keys()
        room = cap - len(held)
        out: list[tuple[int, str]] = []
        for conn_id, ch in joins:
            if ch not in held:
                if room <= 0:
                    continue
                room -= 1
                held.add(ch)
            out.append((conn_id, ch))
        return out

    def _watchdog(self, now: float) -> None:
        s = self.settings
        pending = {c.conn_id: c.pending for c in self._conns.values() if c.state is ConnState.READY}
        retry, move = join_timeouts(
            pending, now, timeout=s.irc_join_ack_timeout_s, retries=s.irc_join_retries
        )
        for conn_id, ch in retry:
            conn = self._conns[conn_id]
            if ch not in self._active:
                del conn.pending[ch]
                self._dirty = True
            elif self._limiter.try_acquire(1):
                conn.send_joins([ch], now)
                self._counts["joins_sent"] += 1
        for conn_id, ch in move:
            conn = self._conns[conn_id]
            attempts = conn.pending.pop(ch).attempts
            self._dirty = True
            if ch not in self._active:
                continue
            self._counts["join_timeouts"] += 1
            if self._troubles.move(ch, self._next_id):
                log.warning(
                    "irc conn %d: JOIN #%s not echoed after %d attempts; moving it to a fresh connection",
                    conn_id, ch, attempts,
                )  # fmt: skip
            else:
                delay = self._troubles.blocked[ch] - now
                log.warning(
                    "irc conn %d: JOIN #%s not echoed on a fresh connection either; next try in %.0f s",
                    conn_id, ch, delay,
                )  # fmt: skip

    def _open_connection(self) -> None:
        conn_id = self._next_id
        self._next_id += 1
        conn = IrcConnection(
            conn_id,
            login=self._login,
            hooks=self,
            clock=self._clock,
            max_line_bytes=self.settings.irc_max_line_bytes,
            read_tick=self._read_tick,
        )
        if self._paused:
            conn.pause_reading()
        self._conns[conn_id] = conn
        self._openers[conn_id] = asyncio.get_running_loop().create_task(
            self._connect(conn), name=f"irc-connect-{conn_id}"
        )

    async def _connect(self, conn: IrcConnection) -> None:
        s = self.settings
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(
                loop.create_connection(
                    lambda: conn,
                    s.irc_host,
                    s.irc_port,
                    ssl=self._ssl,
                    server_hostname=s.irc_host if self._ssl else None,
                ),
                s.irc_connect_timeout_s,
            )
        except asyncio.CancelledError:
            conn.abort()
            raise
        except (OSError, TimeoutError) as exc:
            conn.connect_failed(f"connect to {s.irc_host}:{s.irc_port} failed: {exc or type(exc).__name__}")
        finally:
            self._openers.pop(conn.conn_id, None)

    def _abort_all(self) -> None:
        for task in list(self._openers.values()):
            task.cancel()
        for conn in [*self._conns.values(), *self._leaving.values()]:
            conn.abort()


def _by_conn(actions: Iterable[tuple[int, str]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for conn_id, ch in actions:
        out[conn_id].append(ch)
    return out
