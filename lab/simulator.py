"""Simulated chatters: real IRC clients sending PRIVMSGs into an IRC server at a steady rate.

Channels get a Zipf-like share of the traffic (a few hot channels, a long tail). Every message text
starts with a unique token so that what was sent can be matched against what was stored. Each client
connection joins the channels it sends to (InspIRCd's default +n mode forbids outside messages).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import random
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.irc_parse import IrcMessage, parse_message
from core.logins import login_of
from core.times import now_ms

log = logging.getLogger(__name__)

_WORDS = (
    "Kappa",
    "PogChamp",
    "LUL",
    "hello",
    "gg",
    "wp",
    "nice",
    "KEKW",
    "what",
    "is",
    "this",
    "play",
    "lol",
    "monkaS",
    "omg",
    "clip",
    "it",
    "chat",
    "sub",
    "hype",
    "🐸",
    "日本語",
    "ñandú",
)
_JOIN_BATCH = 20
TICK_S = 0.05
"""How often the simulator sends what is due (each client's messages in one write)."""
_BACKLOG_BYTES = 1 << 20


@functools.lru_cache(maxsize=100_000)
def _json_text(value: str) -> str:
    """``value`` as a JSON string (a channel name: the same few hundred, written again and again)."""
    return json.dumps(value)


def hotness_order(channels: Sequence[str], rng: random.Random) -> list[str]:
    """``channels`` from the hottest to the coldest: rank ``k`` gets a share of the traffic proportional
    to ``1 / (k + 1) ** zipf_s``. Which channels are hot is random but seeded: a simulator built with
    ``seed`` uses ``hotness_order(channels, random.Random(seed))`` (channels lower case, without ``#``)."""
    order = list(channels)
    rng.shuffle(order)
    return order


@dataclass(frozen=True)
class SentMessage:
    channel: str
    token: str
    sent_at_ms: int

    @classmethod
    def from_json(cls, line: str | bytes) -> SentMessage:
        """One line of a ``chatlog simulate --out`` file: ``{"c": channel, "t": token, "ts": epoch ms}``."""
        d = json.loads(line)
        return cls(d["c"], d["t"], d["ts"])

    def to_json(self) -> str:
        """The line :meth:`from_json` reads back (without the newline)."""
        return json.dumps({"c": self.channel, "t": self.token, "ts": self.sent_at_ms})


def read_sent(path: Path) -> list[SentMessage]:
    """The messages a ``chatlog simulate --out`` run recorded (one JSON object per line)."""
    with path.open() as fh:
        return [SentMessage.from_json(line) for line in fh if line.strip()]


@dataclass
class _Client:
    index: int
    nick: str
    channels: list[str]
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    alive: bool = False
    pump: asyncio.Task[None] | None = None
    joined: set[str] = field(default_factory=set)


class ChatSimulator:
    """Many client connections sending ``rate`` messages/s in total over ``channels``."""

    def __init__(
        self,
        host: str,
        port: int,
        channels: Sequence[str],
        *,
        rate: float,
        connections: int = 8,
        zipf_s: float = 1.1,
        seed: int = 0,
        prefix: str = "sim",
    ) -> None:
        if not channels:
            raise ValueError("the simulator needs at least one channel")
        self.host, self.port, self.rate = host, port, rate
        self.channels = [login_of(c) for c in channels]
        self.prefix = prefix
        self._rng = random.Random(seed)
        n = max(1, min(connections, len(self.channels)))
        run = secrets.token_hex(3)  # unique per run, so tokens never collide with an earlier run's
        self._clients = [_Client(i, f"{prefix}{run}c{i}"[:30], self.channels[i::n]) for i in range(n)]
        self._owner = {ch: c for c in self._clients for ch in c.channels}
        weights = [1.0 / (rank + 1) ** zipf_s for rank in range(len(self.channels))]
        self._order = hotness_order(self.channels, self._rng)
        self._cum = list(itertools.accumulate(weights))
        self._seq = itertools.count()
        self._run = run
        self._stop = asyncio.Event()
        self.sent: list[SentMessage] = []
        """What was sent, with ``keep`` (the library's :func:`simulate`); a command writes it out instead
        (:meth:`take`)."""
        self.keep = True
        self._unread: list[str] = []
        """The records of what was sent not taken yet, as the lines of a ``--out`` file."""
        self.count = 0
        self.failed = 0

    async def start(self, timeout: float = 60.0) -> None:
        """Connect every client, register, join its channels; returns when all JOINs are echoed."""
        connecting = asyncio.gather(*(self._connect(c) for c in self._clients))
        try:
            await asyncio.wait_for(connecting, timeout)
        finally:  # cancelled (a stop, the timeout): its outcome is read, not "never retrieved"
            if connecting.done():
                with contextlib.suppress(asyncio.CancelledError):
                    connecting.exception()

    async def _connect(self, client: _Client) -> None:
        client.joined.clear()
        client.reader, client.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
        client.writer.write(f"NICK {client.nick}\r\nUSER {client.nick} 0 * :chatlog simulator\r\n".encode())
        await self._read_until(client, lambda msg: msg.command == "001")
        for i in range(0, len(client.channels), _JOIN_BATCH):
            batch = client.channels[i : i + _JOIN_BATCH]
            client.writer.write(f"JOIN {','.join('#' + c for c in batch)}\r\n".encode())
        want = set(client.channels)

        def all_joined(msg: IrcMessage) -> bool:
            if msg.command == "JOIN" and msg.params and msg.sender == client.nick.lower():
                client.joined.add(login_of(msg.params[0]))
            return client.joined >= want

        await self._read_until(client, all_joined)
        client.alive = True
        client.pump = asyncio.create_task(self._pump(client))

    async def _read_until(self, client: _Client, done: Callable[[IrcMessage], bool]) -> None:
        assert client.reader is not None and client.writer is not None
        while True:
            raw = await client.reader.readline()
            if not raw:
                raise ConnectionError(f"simulator client {client.nick}: server closed the connection")
            line = raw.decode(errors="replace").rstrip("\r\n")
            msg = parse_message(line)
            if msg.command == "PING":
                client.writer.write(f"PONG :{msg.params[-1] if msg.params else ''}\r\n".encode())
            elif msg.command in ("432", "433", "465", "ERROR"):
                raise ConnectionError(f"simulator client {client.nick}: {line}")
            if done(msg):
                return

    async def _pump(self, client: _Client) -> None:
        """Answer PINGs and drop everything else the server sends this client."""
        assert client.reader is not None and client.writer is not None
        try:
            while True:
                raw = await client.reader.readline()
                if not raw:
                    break
                if raw.startswith(b"PING"):
                    client.writer.write(b"PONG" + raw[4:])
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        client.alive = False
        # The server went away (a restart, say): messages for this client's channels count as failed
        # until it is back and has re-joined them.
        delay = 0.5
        while not self._stop.is_set():
            await asyncio.sleep(delay)
            try:
                await asyncio.wait_for(self._connect(client), 30)
                log.info("simulator client %s reconnected", client.nick)
                return
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                log.info("simulator client %s: reconnect failed (%s)", client.nick, exc)
                delay = min(delay * 2, 5.0)

    def stop(self) -> None:
        self._stop.set()

    async def run(self, duration: float, *, rate: float | None = None, tick: float = TICK_S) -> None:
        """Send at ``rate`` (default: the constructor's) for ``duration`` seconds or until stop(): every
        ``tick`` the messages due, each client's in one write (a client's socket is waited for only once it
        holds more than :data:`_BACKLOG_BYTES` unsent)."""
        rate = self.rate if rate is None else rate
        t0 = time.monotonic()
        done = 0
        while not self._stop.is_set():
            elapsed = time.monotonic() - t0
            if elapsed >= duration:
                break
            due = int(rate * elapsed) - done
            if due > 0:
                self._send_batch(due)
                done += due
                backlog = [
                    c.writer.drain()
                    for c in self._clients
                    if c.alive and c.writer and c.writer.transport.get_write_buffer_size() > _BACKLOG_BYTES
                ]
                if backlog:
                    await asyncio.gather(*backlog)
            await asyncio.sleep(min(tick, max(0.0, duration - (time.monotonic() - t0))))

    def take(self) -> list[str]:
        """The ``--out`` lines of what was sent since the last call (each with its newline)."""
        out, self._unread = self._unread, []
        return out

    def _send_batch(self, count: int) -> None:
        picks = self._rng.choices(self._order, cum_weights=self._cum, k=count)
        now = now_ms()
        out: dict[int, list[str]] = {}
        tail = " ".join(self._rng.choices(_WORDS, k=3))
        head = f"{self.prefix}{self._run}-"
        owner, seq, records, keep = self._owner, self._seq, self._unread, self.keep
        stamp = f',"ts":{now}}}\n'
        for channel in picks:
            client = owner[channel]
            if not client.alive:
                self.failed += 1
                continue
            token = f"{head}{next(seq)}"
            lines = out.get(client.index)
            if lines is None:
                lines = out[client.index] = []
            lines.append(f"PRIVMSG #{channel} :{token} {tail}\r\n")
            records.append(f'{{"c":{_json_text(channel)},"t":"{token}"{stamp}')
            if keep:
                self.sent.append(SentMessage(channel, token, now))
        self.count += count
        for index, lines in out.items():
            writer = self._clients[index].writer
            if writer is not None:
                writer.write("".join(lines).encode())

    async def close(self) -> None:
        for client in self._clients:
            if client.writer is not None and not client.writer.is_closing():
                with contextlib.suppress(ConnectionError):
                    client.writer.write(b"QUIT :bye\r\n")
                    await client.writer.drain()
                client.writer.close()
            if client.pump is not None:
                client.pump.cancel()
        await asyncio.sleep(0)


def simulate(
    host: str, port: int, channels: Sequence[str], *, rate: float, duration: float, **kwargs: object
) -> list[SentMessage]:
    """Blocking helper: connect, join, send for ``duration`` seconds, quit; returns what was sent."""

    async def main() -> list[SentMessage]:
        sim = ChatSimulator(host, port, channels, rate=rate, **kwargs)  # type: ignore[arg-type]
        try:
            await sim.start()
            await sim.run(duration)
        finally:
            await sim.close()
        return sim.sent

    return asyncio.run(main())
