"""lab.bench.cql_ping: the protocol v4 frames it sends and how it reads the node's answers (the exchange with
a real node is tests/integration/lab/bench/test_cql_ping.py)."""

from __future__ import annotations

import asyncio
import struct

import pytest

from lab.bench import cql_ping


def test_a_request_frame_is_the_v4_header_then_the_body() -> None:
    data = cql_ping.frame(cql_ping.OPTIONS, b"abc", stream=7)
    assert data[:9] == bytes([0x04, 0x00, 0x00, 0x07, 0x05, 0x00, 0x00, 0x00, 0x03])
    assert data[9:] == b"abc"


def test_startup_asks_for_cql_3_without_compression() -> None:
    data = cql_ping.startup()
    assert data[4] == cql_ping.STARTUP
    body = data[9:]
    assert struct.unpack(">I", data[5:9])[0] == len(body)
    assert body == b"\x00\x01" + b"\x00\x0bCQL_VERSION" + b"\x00\x053.0.0"


def test_a_plain_login_token_is_nul_user_nul_password_as_bytes() -> None:
    data = cql_ping.plain_login("alice", "s3cret")
    assert data[4] == cql_ping.AUTH_RESPONSE
    assert data[9:] == struct.pack(">i", 13) + b"\0alice\0s3cret"


def test_a_response_header_gives_its_opcode_and_length() -> None:
    header = cql_ping.HEADER.pack(0x84, 0, 0, cql_ping.SUPPORTED, 42)
    assert cql_ping.response_header(header) == (cql_ping.SUPPORTED, 42)


@pytest.mark.parametrize("version", [0x04, 0x85, 0x83])
def test_a_header_of_another_version_or_a_request_is_refused(version: int) -> None:
    with pytest.raises(cql_ping.PingError, match="not a protocol v4 response"):
        cql_ping.response_header(cql_ping.HEADER.pack(version, 0, 0, cql_ping.SUPPORTED, 0))


def test_an_error_body_reads_as_its_code_and_message() -> None:
    body = struct.pack(">iH", 0x100, 9) + b"bad login"
    assert cql_ping.error_message(body) == "0x0100 bad login"


def _answering(*responses: bytes) -> cql_ping.Connection:
    """A connection whose node's answers are ``responses`` (a stream fed in advance; what it sends is
    dropped)."""

    class Sink:
        def write(self, _data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    reader = asyncio.StreamReader()
    for response in responses:
        reader.feed_data(response)
    return cql_ping.Connection(reader, Sink())  # type: ignore[arg-type]


def _response(opcode: int, body: bytes = b"") -> bytes:
    return cql_ping.HEADER.pack(0x84, 0, 0, opcode, len(body)) + body


def test_a_ping_answered_supported_returns_and_its_body_is_consumed() -> None:
    async def two() -> None:
        connection = _answering(_response(cql_ping.SUPPORTED, b"xyz"), _response(cql_ping.SUPPORTED))
        await connection.ping()
        await connection.ping()

    asyncio.run(two())


def test_a_ping_answered_with_an_error_raises_its_message() -> None:
    async def one() -> None:
        error = struct.pack(">iH", 0x000A, 8) + b"overload"
        await _answering(_response(cql_ping.ERROR, error)).ping()

    with pytest.raises(cql_ping.PingError, match="0x000a overload"):
        asyncio.run(one())


def test_a_ping_answered_with_another_opcode_raises() -> None:
    async def one() -> None:
        await _answering(_response(cql_ping.READY)).ping()

    with pytest.raises(cql_ping.PingError, match="answered opcode 0x02, expected 0x06"):
        asyncio.run(one())


def test_a_connection_closed_before_the_answer_is_one_clear_error() -> None:
    async def one() -> None:
        connection = _answering(_response(cql_ping.SUPPORTED)[:5])
        connection._reader.feed_eof()
        await connection.ping()

    with pytest.raises(cql_ping.PingError, match="closed before an answer"):
        asyncio.run(one())
