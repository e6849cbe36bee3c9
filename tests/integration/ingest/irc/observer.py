"""An outside view of the IRC pool's channels for the tests against the local InspIRCd: a plain IRC client
on its own socket (:class:`Observer`), and which of a channel's members are a worker's connections."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class Observer:
    """A plain IRC client on its own socket: asks NAMES, joins and talks like an outside user."""

    def __init__(self, nick: str) -> None:
        self.nick = nick
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def connect(self, host: str, port: int) -> None:
        self._reader, self._writer = await asyncio.open_connection(host, port, limit=1 << 20)
        self.send(f"NICK {self.nick}", "USER obs 0 * :observer")
        await self._until(lambda parts: parts[1] == "001")

    def send(self, *lines: str) -> None:
        assert self._writer is not None
        self._writer.write("".join(f"{line}\r\n" for line in lines).encode())

    async def _until(self, done: Callable[[list[str]], bool]) -> list[list[str]]:
        assert self._reader is not None
        seen: list[list[str]] = []
        while True:
            raw = await asyncio.wait_for(self._reader.readline(), 30)
            if not raw:
                raise ConnectionError("observer connection closed")
            line = raw.decode().rstrip("\r\n")
            if line.startswith("@"):
                line = line.split(" ", 1)[1]
            if line.startswith("PING"):
                self.send("PONG" + line[4:])
                continue
            parts = line.split(" ")
            seen.append(parts)
            if len(parts) > 1 and done(parts):
                return seen

    async def names(self, channels: list[str]) -> dict[str, list[str]]:
        """Members of each channel by NAMES (353 lines until 366 for the last one)."""
        members: dict[str, list[str]] = {ch: [] for ch in channels}
        self.send(*(f"NAMES #{ch}" for ch in channels))
        last = f"#{channels[-1]}"
        for parts in await self._until(lambda p: p[1] == "366" and p[3].lower() == last):
            if parts[1] == "353":
                ch = parts[4].lstrip("#").lower()
                names = [n.lstrip(":@+") for n in parts[5:] if n.lstrip(":@+")]
                members[ch].extend(names)
        return members

    async def join(self, channels: list[str]) -> None:
        self.send(f"JOIN {','.join('#' + ch for ch in channels)}")
        last = f"#{channels[-1]}"
        await self._until(lambda p: p[1] == "366" and p[3].lower() == last)

    async def close(self) -> None:
        if self._writer is not None:
            self.send("QUIT :bye")
            self._writer.close()


def pool_nicks(members: list[str], worker: str) -> list[str]:
    return [n for n in members if n.startswith(f"{worker}-")]


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 240))
