"""One IRC connection of the pool: an asyncio Protocol that registers, answers PING, keeps the JOIN
bookkeeping (joined / pending / parting) from the server's echoes, and hands every other line to the
pool in batches, one batch per chunk read.

The pool decides; the connection only reports (``ConnectionHooks``) and executes (JOIN, PART, QUIT).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from core.irc_parse import IrcMessage, parse_message
from core.logins import login_of
from core.times import now_ms
from ingest.irc.lines import LineSplitter, route_lines
from ingest.irc.login import Login
from ingest.irc.read_tick import ReadTick
from ingest.irc.reconcile import ConnState, PendingJoin

log = logging.getLogger(__name__)

# Numerics that refuse a JOIN: no such channel, too many channels, full, invite only, banned, bad key,
# bad mask, needs a registered nick, illegal name, secure only.
JOIN_REFUSALS = frozenset({"403", "405", "471", "473", "474", "475", "476", "477", "479", "489"})
NICK_REFUSALS = frozenset({"431", "432", "433", "436"})
# Twitch NOTICE msg-id values that answer a JOIN instead of the echo.
TWITCH_JOIN_REFUSALS = frozenset(
    {"msg_channel_suspended", "msg_banned", "msg_requires_verified_phone_number"}
)
_MAX_NICK_TRIES = 10
_QUIT_GRACE_S = 3.0


class ConnectionHooks(Protocol):
    """What a connection reports to its pool (all called on the event loop)."""

    def deliver(self, lines: list[str], received_at_ms: int) -> None: ...
    def connection_ready(self, conn: IrcConnection) -> None: ...
    def connection_closed(self, conn: IrcConnection, reason: str, kind: str, failure: bool) -> None: ...
    def reconnect_requested(self, conn: IrcConnection) -> None: ...
    def membership_changed(self, conn: IrcConnection) -> None: ...
    def join_refused(self, conn: IrcConnection, channel: str, reason: str) -> None: ...


class IrcConnection(asyncio.Protocol):
    """State of one connection. ``state`` is CONNECTING until 001, READY, DRAINING after RECONNECT,
    CLOSED once we sent QUIT or lost it (lines still arriving before the socket closes are delivered)."""

    def __init__(
        self,
        conn_id: int,
        *,
        login: Login,
        hooks: ConnectionHooks,
        clock: Callable[[], float] = time.monotonic,
        max_line_bytes: int = 1 << 20,
        read_tick: ReadTick | None = None,
    ) -> None:
        self.conn_id = conn_id
        self.login = login
        self.nick = login.nick(conn_id)
        self.state = ConnState.CONNECTING
        self.joined: set[str] = set()
        self.pending: dict[str, PendingJoin] = {}
        self.parting: set[str] = set()
        self.created_at = clock()
        self.ready_at: float | None = None
        self.drain_since: float | None = None
        self.last_rx = self.created_at
        self.ping_sent_at: float | None = None
        self.bytes_read = 0
        self.line_counts: dict[str, int] = {}  # lines per channel (as the server spells it) since taken
        self.nick_collisions = 0
        self.close_reason: str | None = None
        self.loss_kind = "closed_by_server"
        self._reported = False  # the pool was told this connection is gone
        self._clock = clock
        self._hooks = hooks
        self._splitter = LineSplitter(max_line_bytes)
        self._transport: asyncio.Transport | None = None
        self._caps_waiting = 0
        self._lost = False
        self._paused = False
        self._held = False  # not reading until the read tick ends (ingest/irc/read_tick.py)
        self._read_tick = read_tick
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # ---- asyncio.Protocol -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if self.state is ConnState.CLOSED:  # closed while the TCP connect was under way
            transport.abort()
            return
        if self._paused:
            transport.pause_reading()
        lines = self.login.registration(self.nick)
        self._caps_waiting = 1 if self.login.caps else 0
        self.write(lines)

    def data_received(self, data: bytes) -> None:
        received_at_ms = now_ms()
        self.last_rx = self._clock()
        self.bytes_read += len(data)
        splitter = self._splitter
        too_long = splitter.lines_too_long
        lines = splitter.feed(data)
        if splitter.lines_too_long != too_long:
            log.warning(
                "connection %d: discarded a line longer than %d bytes (CHATLOG_IRC_MAX_LINE_BYTES); "
                "%d so far",
                self.conn_id, splitter.max_line_bytes, splitter.lines_too_long,
            )  # fmt: skip
        if lines:
            lines = route_lines(lines, self._handle, self.line_counts)
            if lines:
                self._hooks.deliver(lines, received_at_ms)
        if self._read_tick is not None:
            self._read_tick.read(self, len(data))

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        if not self._reported:  # the server (or the network) ended it, not us
            reason = self.close_reason or (f"connection lost: {exc}" if exc else "closed by the server")
            self._leave(reason, self.loss_kind, failure=self.state is not ConnState.DRAINING)
        if not self.closed.done():
            self.closed.set_result(None)

    def _leave(self, reason: str, kind: str, failure: bool) -> None:
        """Become CLOSED and tell the pool, once; lines still arriving are delivered all the same."""
        if self._reported:
            return
        self._reported = True
        self.state = ConnState.CLOSED
        self.close_reason = reason
        self.loss_kind = kind
        self._hooks.connection_closed(self, reason, kind, failure)

    # ---- actions ----------------------------------------------------------------------------------
    def take_line_counts(self) -> dict[str, int]:
        """Lines per channel since the last call (channel as written by the server, ``#`` stripped)."""
        out, self.line_counts = self.line_counts, {}
        return out

    @property
    def decode_errors(self) -> int:
        return self._splitter.decode_errors

    @property
    def lines_too_long(self) -> int:
        """Lines longer than ``max_line_bytes``, discarded without holding them (counted, logged)."""
        return self._splitter.lines_too_long

    def write(self, lines: Iterable[str]) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write("".join(f"{line}\r\n" for line in lines).encode())

    def send_joins(self, channels: Iterable[str], now: float) -> None:
        pending = self.pending
        out = []
        for ch in channels:
            previous = pending.get(ch)
            pending[ch] = PendingJoin(now, previous.attempts + 1 if previous else 1)
            out.append(f"JOIN #{ch}")
        self.write(out)

    def send_parts(self, channels: Iterable[str]) -> None:
        out = []
        for ch in channels:
            self.parting.add(ch)
            out.append(f"PART #{ch}")
        self.write(out)

    def close(
        self, reason: str, *, kind: str = "requested", failed: bool = False, part: bool = False
    ) -> None:
        """Leave: PART (if asked) and QUIT; the socket is aborted if the server does not close it.
        ``failed`` marks a close for cause (ping timeout...): the pool then backs off."""
        if self.state is ConnState.CLOSED:
            return
        if part and self.joined:
            self.write(f"PART #{ch}" for ch in sorted(self.joined))
        self.write([f"QUIT :{reason}"])
        self._leave(reason, kind, failed)
        asyncio.get_running_loop().call_later(_QUIT_GRACE_S, self.abort)

    def connect_failed(self, reason: str) -> None:
        """The TCP/TLS connect itself failed or timed out."""
        self._leave(reason, "connect_failed", True)
        self.connection_lost(None)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()
        elif not self._lost:  # never connected: nothing will call connection_lost for us
            self._leave(self.close_reason or "aborted before connecting", "requested", False)
            self.connection_lost(None)

    def pause_reading(self) -> None:
        """Stop reading (caller back-pressure); keepalive is suspended while paused."""
        if self._paused:
            return
        self._paused = True
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if not self._paused:
            return
        self._paused = False
        self.last_rx = self._clock()  # silence while we did not read says nothing about the server
        self.ping_sent_at = None
        if not self._held and self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def hold(self) -> bool:
        """Stop reading until the read tick ends (:class:`ingest.irc.read_tick.ReadTick`); False when the
        connection is not reading anyway (paused by the caller, closing, not connected)."""
        transport = self._transport
        if self._held or self._paused or transport is None or transport.is_closing():
            return False
        self._held = True
        transport.pause_reading()
        return True

    def release(self) -> None:
        """The read tick ended: read again, unless the caller paused reading meanwhile."""
        self._held = False
        if not self._paused and self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def check(self, now: float, *, ping_interval: float, ping_timeout: float, connect_timeout: float) -> None:
        """Keepalive and registration deadline; closes the connection when the server is gone."""
        if self.state is ConnState.CLOSED:
            return
        if self.state is ConnState.CONNECTING:
            if now - self.created_at >= connect_timeout:
                self.close(f"no registration within {connect_timeout:g} s", kind="timeout", failed=True)
                self.abort()
            return
        if self._paused:
            return
        if self.ping_sent_at is not None:
            if self.last_rx > self.ping_sent_at:
                self.ping_sent_at = None
            elif now - self.ping_sent_at >= ping_timeout:
                self.close(f"ping timeout ({ping_timeout:g} s)", kind="ping_timeout", failed=True)
                self.abort()
                return
        if self.ping_sent_at is None and now - self.last_rx >= ping_interval:
            self.write([f"PING :chatlog-{self.conn_id}"])
            self.ping_sent_at = now

    # ---- protocol lines ---------------------------------------------------------------------------
    def _handle(self, line: str) -> bool:
        """Consume a protocol line (True) or pass it to the caller (False)."""
        msg = parse_message(line)
        cmd = msg.command
        if cmd.isdigit():
            self._numeric(msg)
            return True
        if cmd in ("JOIN", "PART", "KICK", "NICK"):
            return self._membership(msg)
        if cmd == "PING":
            self.write([f"PONG :{msg.params[-1]}" if msg.params else "PONG"])
        elif cmd == "CAP":
            self._cap(msg)
        elif cmd == "NOTICE":
            return self._notice(msg)
        elif cmd == "RECONNECT":
            if self.state is ConnState.READY:
                self.state = ConnState.DRAINING
                self.drain_since = self._clock()
                self._hooks.reconnect_requested(self)
        elif cmd == "ERROR":
            text = msg.params[-1] if msg.params else ""
            if not self._reported:
                self.close_reason = f"server error: {text}"
                self.loss_kind = "server_error"
        return True  # PONG, GLOBALUSERSTATE

    def _membership(self, msg: IrcMessage) -> bool:
        own = msg.sender == self.nick.lower()
        if msg.command == "KICK":
            if len(msg.params) < 2 or msg.params[1].lower() != self.nick.lower():
                return False
            ch = login_of(msg.params[0])
            self.joined.discard(ch)
            self.parting.discard(ch)
            self._hooks.membership_changed(self)
            log.warning("irc conn %d (%s): kicked from #%s: %s", self.conn_id, self.nick, ch, msg.params[-1])
            return True
        if not own or not msg.params:
            return False
        if msg.command == "NICK":
            self.nick = msg.params[0]
            return True
        for name in msg.params[0].split(","):
            ch = login_of(name)
            if msg.command == "JOIN":
                self.pending.pop(ch, None)
                self.joined.add(ch)
            else:
                self.joined.discard(ch)
                self.parting.discard(ch)
        self._hooks.membership_changed(self)
        return True

    def _numeric(self, msg: IrcMessage) -> None:
        code = msg.command
        if code == "001":
            if msg.params:
                self.nick = msg.params[0]
            if self.state is ConnState.CONNECTING:
                self.state = ConnState.READY
                self.ready_at = self._clock()
                self._hooks.connection_ready(self)
        elif code in JOIN_REFUSALS and len(msg.params) >= 2:
            ch = login_of(msg.params[1])
            if self.pending.pop(ch, None) is not None:
                self._hooks.join_refused(self, ch, f"{code} {msg.params[-1]}")
        elif code in NICK_REFUSALS and self.state is ConnState.CONNECTING:
            self._nick_refused(code)
        elif code in ("464", "465"):
            text = msg.params[-1] if msg.params else ""
            self.close(f"login refused: {code} {text}", kind="login_refused", failed=True)
        elif code == "421" and len(msg.params) >= 2 and msg.params[1].upper() == "CAP":
            self._caps_waiting = 0  # a server without CAP registers without CAP END

    def _nick_refused(self, code: str) -> None:
        self.nick_collisions += 1
        old = self.nick
        if not self.login.unique_nicks or self.nick_collisions > _MAX_NICK_TRIES:
            self.close(f"nick {old} refused ({code}) {self.nick_collisions} times", kind="nick", failed=True)
            return
        self.nick = self.login.nick(self.conn_id)
        log.warning("irc conn %d: nick %s refused (%s), trying %s", self.conn_id, old, code, self.nick)
        self.write([f"NICK {self.nick}"])

    def _cap(self, msg: IrcMessage) -> None:
        if len(msg.params) < 3 or self._caps_waiting <= 0:
            return
        sub = msg.params[1].upper()
        requested = msg.params[-1].split()
        if sub == "NAK" and len(requested) > 1 and self._caps_waiting == 1:
            # The request is all-or-nothing: ask for each capability alone and keep what we get.
            self._caps_waiting = len(requested)
            self.write(f"CAP REQ :{cap}" for cap in requested)
            return
        if sub in ("ACK", "NAK"):
            if sub == "NAK":
                log.warning("irc conn %d: server refused capabilities %s", self.conn_id, msg.params[-1])
            self._caps_waiting -= 1
            if self._caps_waiting == 0:
                self.write(["CAP END"])

    def _notice(self, msg: IrcMessage) -> bool:
        if self.state is ConnState.CONNECTING:
            text = msg.params[-1] if msg.params else ""
            lowered = text.lower()
            # Twitch: "Login authentication failed", "Improperly formatted auth", "Login unsuccessful"
            if self.login.flavor == "twitch" and ("login" in lowered or "auth" in lowered):
                self.close(f"login refused: {text}", kind="login_refused", failed=True)
            return True
        msg_id = msg.tag("msg-id")
        if msg_id in TWITCH_JOIN_REFUSALS and msg.params:
            ch = login_of(msg.params[0])
            if self.pending.pop(ch, None) is not None:
                self._hooks.join_refused(self, ch, f"NOTICE {msg_id}")
        return False  # NOTICE lines are chat events for the caller too
