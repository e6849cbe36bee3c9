"""A tiny in-process asyncio IRC server: a test double for protocol logic (registration, CAP, JOIN
echoes, PING, RECONNECT, nick collisions, silent JOINs, dead servers). Not a real IRC server: the
integration tests use InspIRCd. Every line a client sends is recorded with a global sequence number
so tests can assert orderings across connections (e.g. JOIN on the new connection before QUIT on the
old one).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core.irc_parse import parse_message
from core.logins import login_of


@dataclass
class FakeClient:
    index: int  # 0, 1, 2... in connection order
    writer: asyncio.StreamWriter
    nick: str = ""
    registered: bool = False
    joined: set[str] = field(default_factory=set)
    received: list[tuple[int, str]] = field(default_factory=list)  # (sequence, line)
    closed: bool = False
    connected_at: float = field(default_factory=time.monotonic)
    closed_at: float | None = None

    def commands(self, command: str) -> list[str]:
        return [line for _, line in self.received if parse_message(line).command == command]


class FakeIrcServer:
    """``async with FakeIrcServer() as server``: listens on 127.0.0.1:``server.port``.

    Behaviour knobs (may be changed while running): ``nick_taken(client, nick)`` → 433 (nicks of
    other live clients are always taken), ``silent_join(client_index, channel)`` → no echo,
    ``answer_ping`` (PONG to client PINGs), ``part_delay_s`` (a PART takes effect, and is echoed, that
    much later: a busy server).
    """

    def __init__(self) -> None:
        self.clients: list[FakeClient] = []
        self.nick_taken: Callable[[FakeClient, str], bool] = lambda _c, _n: False
        self.silent_join: Callable[[int, str], bool] = lambda _i, _ch: False
        self.answer_ping = True
        self.part_delay_s = 0.0
        self._seq = itertools.count()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> FakeIrcServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for client in self.clients:
            self.drop(client)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    # ---- driving the test -------------------------------------------------------------------------
    def live(self) -> list[FakeClient]:
        return [c for c in self.clients if not c.closed]

    def send(self, client: FakeClient, line: str) -> None:
        if not client.closed:
            client.writer.write(f"{line}\r\n".encode())

    def privmsg(self, channel: str, text: str, *, sender: str = "alice", msgid: str | None = None) -> int:
        """A chat line to every client in ``channel``; returns how many clients got it."""
        tags = f"@msgid={msgid};time=2026-01-01T00:00:00.000Z " if msgid else ""
        line = f"{tags}:{sender}!{sender}@fake PRIVMSG #{channel} :{text}"
        targets = [c for c in self.live() if channel in c.joined]
        for c in targets:
            self.send(c, line)
        return len(targets)

    def drop(self, client: FakeClient) -> None:
        """Close the socket without a word (a crashed server or a dead network)."""
        client.closed = True
        client.closed_at = client.closed_at or time.monotonic()
        client.writer.close()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("condition not met in time")
            await asyncio.sleep(0.01)

    # ---- the server -------------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = FakeClient(len(self.clients), writer)
        self.clients.append(client)
        cap_open = False
        user_seen = False
        try:
            while not client.closed:
                raw = await reader.readline()
                if not raw:
                    break
                line = raw.decode().rstrip("\r\n")
                client.received.append((next(self._seq), line))
                msg = parse_message(line)
                cmd, params = msg.command, msg.params
                last = params[-1] if params else ""
                if cmd == "CAP" and params[:1] == ("REQ",):
                    cap_open = True
                    self.send(client, f":fake CAP * ACK :{' '.join(params[1:])}")
                elif cmd == "CAP" and params[:1] == ("END",):
                    cap_open = False
                elif cmd == "NICK":
                    nick = params[0] if params else ""
                    if self.nick_taken(client, nick) or any(
                        c.nick == nick for c in self.live() if c is not client
                    ):
                        self.send(client, f":fake 433 * {nick} :Nickname is already in use.")
                        continue
                    client.nick = nick
                elif cmd == "USER":
                    user_seen = True
                elif cmd == "PING":
                    if self.answer_ping:
                        self.send(client, f":fake PONG fake :{last}")
                    continue
                elif cmd in ("JOIN", "PART") and client.registered:
                    self._membership(client, cmd, params[0] if params else "")
                elif cmd == "QUIT":
                    self.send(client, "ERROR :Closing link (quit)")
                    break
                if not client.registered and client.nick and user_seen and not cap_open:
                    client.registered = True
                    self.send(client, f":fake 001 {client.nick} :Welcome")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            client.closed = True
            client.closed_at = client.closed_at or time.monotonic()
            writer.close()

    def _membership(self, client: FakeClient, cmd: str, names: str) -> None:
        for name in names.split(","):
            ch = login_of(name)
            if cmd == "JOIN":
                if self.silent_join(client.index, ch):
                    continue
                client.joined.add(ch)
            elif self.part_delay_s > 0:
                asyncio.get_running_loop().call_later(self.part_delay_s, self._part, client, ch)
                continue
            else:
                client.joined.discard(ch)
            self.send(client, f":{client.nick}!u@fake {cmd} #{ch}")

    def _part(self, client: FakeClient, ch: str) -> None:
        client.joined.discard(ch)
        self.send(client, f":{client.nick}!u@fake PART #{ch}")
