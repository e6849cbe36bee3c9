"""The least a Cassandra request costs: a native-protocol OPTIONS on a ready connection, over a raw socket.

No driver, no query, no read: the node decodes the frame, hands it to its request threads (as it does every
request once a connection is ready), and answers SUPPORTED. ``chatlog bench read-floor`` measures it beside
justlog's whole answer: a server that sends Cassandra one request per answer cannot answer faster than this.

Protocol v4 framing (a 9-byte header, then the body); a connection says STARTUP first (and logs in with
SASL PLAIN when the node asks), as a driver's does, so the OPTIONS that follow take the node's request path
rather than its connection set-up.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Sequence
from typing import Final

VERSION: Final = 4
HEADER: Final = struct.Struct(">BBhBI")
"""version, flags, stream, opcode, body length."""
ERROR, STARTUP, READY, AUTHENTICATE, OPTIONS, SUPPORTED = 0x00, 0x01, 0x02, 0x03, 0x05, 0x06
AUTH_RESPONSE, AUTH_SUCCESS = 0x0F, 0x10
RESPONSE_BIT: Final = 0x80


class PingError(Exception):
    """The node answered something a ping does not expect (its error message, when it sent one)."""


def frame(opcode: int, body: bytes = b"", stream: int = 0) -> bytes:
    """One request frame."""
    return HEADER.pack(VERSION, 0, stream, opcode, len(body)) + body


def string_map(pairs: dict[str, str]) -> bytes:
    """The protocol's [string map]: a short count, then each key and value as a short-length UTF-8 string."""
    out = [struct.pack(">H", len(pairs))]
    for key, value in pairs.items():
        for text in (key, value):
            data = text.encode()
            out.append(struct.pack(">H", len(data)) + data)
    return b"".join(out)


def startup() -> bytes:
    """The STARTUP frame of a plain connection (no compression)."""
    return frame(STARTUP, string_map({"CQL_VERSION": "3.0.0"}))


def plain_login(username: str, password: str) -> bytes:
    """The AUTH_RESPONSE frame of a SASL PLAIN login: a [bytes] token ``\\0user\\0password``."""
    token = b"\0" + username.encode() + b"\0" + password.encode()
    return frame(AUTH_RESPONSE, struct.pack(">i", len(token)) + token)


def response_header(data: bytes) -> tuple[int, int]:
    """(opcode, body length) of a response header; PingError for anything but a v4 response."""
    version, _flags, _stream, opcode, length = HEADER.unpack(data)
    if version != VERSION | RESPONSE_BIT:
        raise PingError(f"not a protocol v4 response (version byte {version:#04x})")
    return opcode, length


def error_message(body: bytes) -> str:
    """An ERROR body's code and message."""
    code, size = struct.unpack_from(">iH", body)
    return f"{code:#06x} {body[6 : 6 + size].decode(errors='replace')}"


class Connection:
    """One ready connection: :meth:`ping` sends OPTIONS and waits for SUPPORTED."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._options = frame(OPTIONS)

    @classmethod
    async def open(cls, host: str, port: int, login: tuple[str, str] | None = None) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        connection = cls(reader, writer)
        try:
            opcode = await connection._ask(startup(), (READY, AUTHENTICATE))
            if opcode == AUTHENTICATE:
                if login is None:
                    raise PingError("the node asks for a login and none was given")
                await connection._ask(plain_login(*login), (AUTH_SUCCESS,))
        except BaseException:
            connection.close()
            raise
        return connection

    async def _ask(self, request: bytes, expected: Sequence[int]) -> int:
        self._writer.write(request)
        try:
            opcode, length = response_header(await self._reader.readexactly(HEADER.size))
            body = await self._reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise PingError("the connection closed before an answer (is it a CQL port?)") from None
        if opcode == ERROR:
            raise PingError(error_message(body))
        if opcode not in expected:
            raise PingError(
                f"answered opcode {opcode:#04x}, expected {', '.join(f'{e:#04x}' for e in expected)}"
            )
        return opcode

    async def ping(self) -> None:
        await self._ask(self._options, (SUPPORTED,))

    def close(self) -> None:
        self._writer.close()


class Pinger:
    """Pings from any number of concurrent callers, each on a connection of its own while it waits (opened
    when none is free, kept for the next caller)."""

    def __init__(self, host: str, port: int, login: tuple[str, str] | None = None) -> None:
        self._where = (host, port, login)
        self._free: list[Connection] = []
        self._all: list[Connection] = []

    async def ping(self) -> None:
        connection = self._free.pop() if self._free else await self._opened()
        await connection.ping()
        self._free.append(connection)

    async def _opened(self) -> Connection:
        connection = await Connection.open(*self._where)
        self._all.append(connection)
        return connection

    def close(self) -> None:
        for connection in self._all:
            connection.close()
        self._all.clear()
        self._free.clear()
