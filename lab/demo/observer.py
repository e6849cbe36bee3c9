"""Who is in which channel, as the IRC server itself says (NAMES): the ground truth of coverage."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Sequence

from core.irc_parse import IrcMessage, parse_message
from core.logins import login_of

_NAMES_BATCH = 20  # InspIRCd's maxtargets


class NamesObserver:
    """An IRC client that asks the server for the members of many channels."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.nick = f"obs{secrets.token_hex(4)}"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def connect(self, timeout: float = 15.0) -> None:
        self.nick = f"obs{secrets.token_hex(4)}"
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port, limit=1 << 22)
        self._writer.write(f"NICK {self.nick}\r\nUSER {self.nick} 0 * :chatlog observer\r\n".encode())
        await asyncio.wait_for(self._until(lambda m: m.command == "001"), timeout)

    async def _until(self, done: Callable[[IrcMessage], bool]) -> None:
        assert self._reader is not None and self._writer is not None
        while True:
            raw = await self._reader.readline()
            if not raw:
                raise ConnectionError("observer: the IRC server closed the connection")
            message = parse_message(raw.decode(errors="replace").rstrip("\r\n"))
            if message.command == "PING":
                self._writer.write(f"PONG :{' '.join(message.params)}\r\n".encode())
            if done(message):
                return

    async def members(self, channels: Sequence[str], timeout: float = 30.0) -> dict[str, set[str]]:
        """channel → nicks in it (prefix modes stripped), for every channel asked (empty if none)."""
        assert self._writer is not None
        out: dict[str, set[str]] = {c: set() for c in channels}
        pending = set(channels)

        def collect(message: IrcMessage) -> bool:
            params = message.params
            if message.command == "353" and len(params) > 3:  # me = #channel :nick @nick ...
                out.setdefault(login_of(params[2]), set()).update(
                    n.lstrip("@+%&~") for n in params[3].split()
                )
            elif message.command == "366" and len(params) > 1:  # me #channel :End of /NAMES list.
                pending.discard(login_of(params[1]))
            return not pending

        for i in range(0, len(channels), _NAMES_BATCH):
            batch = channels[i : i + _NAMES_BATCH]
            self._writer.write(f"NAMES {','.join('#' + c for c in batch)}\r\n".encode())
        await asyncio.wait_for(self._until(collect), timeout)
        return out

    async def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(ConnectionError):
                self._writer.write(b"QUIT :bye\r\n")
                await self._writer.drain()
            self._writer.close()


def worker_of(nick: str, workers: Sequence[str]) -> str | None:
    """The worker id whose pool connection uses ``nick`` (pool nicks are ``<worker>-<n>-<rand>``)."""
    for w in workers:
        if nick.startswith(f"{w}-"):
            return w
    return None
