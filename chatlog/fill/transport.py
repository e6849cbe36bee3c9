"""httpx's requests of a fill sent with the standard library's ``http.client``, the answer read in large
blocks.

A justlog answers a day as a chunked body of ~2 KiB pieces (about four lines each). httpx's own transport
hands each piece up as it comes, so every piece pays h11's event machinery and then each per-chunk step
of the import (~20 µs per line in all on ``chatlog bench fill``). ``http.client`` decodes the chunked
coding itself and returns up to :data:`BLOCK_BYTES` per read, so those costs are paid per 64 KiB instead.
httpx stays the client: redirects, content decoding, timeouts and its errors are unchanged. One
connection per request: a fill asks a day at a time, so the connection set-up is nothing beside the day.
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterator
from typing import Final

import httpx

BLOCK_BYTES: Final = 1 << 16


class _Body(httpx.SyncByteStream):
    """An answer's body in blocks of up to :data:`BLOCK_BYTES`; its connection closed with it."""

    def __init__(self, answer: http.client.HTTPResponse, connection: http.client.HTTPConnection) -> None:
        self._answer = answer
        self._connection = connection

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                block = self._answer.read(BLOCK_BYTES)
            except TimeoutError as exc:
                raise httpx.ReadTimeout(str(exc) or "timed out reading the answer") from None
            except (http.client.HTTPException, OSError) as exc:  # a cut body, a bad chunk, a reset
                raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from None
            if not block:
                return
            yield block

    def close(self) -> None:
        self._answer.close()
        self._connection.close()


class HttpClientTransport(httpx.BaseTransport):
    """An httpx transport over ``http.client`` (HTTP/1.1; TLS with ``ssl_context``, httpx's default
    verification when None)."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context

    def _connection(self, url: httpx.URL, connect_s: float | None) -> http.client.HTTPConnection:
        if url.scheme == "http":
            return http.client.HTTPConnection(url.host, url.port or 80, timeout=connect_s)
        if url.scheme == "https":
            if self._ssl_context is None:
                self._ssl_context = httpx.create_ssl_context()
            return http.client.HTTPSConnection(
                url.host, url.port or 443, timeout=connect_s, context=self._ssl_context
            )
        raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not http or https")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        connection = self._connection(request.url, timeouts.get("connect"))
        try:
            try:
                connection.connect()
            except TimeoutError as exc:
                raise httpx.ConnectTimeout(str(exc) or "timed out connecting") from None
            except OSError as exc:  # refused, unreachable, no such host, a TLS handshake refused
                raise httpx.ConnectError(f"{type(exc).__name__}: {exc}") from None
            assert connection.sock is not None
            connection.sock.settimeout(timeouts.get("read"))
            answer = _sent(connection, request)
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            answer.status,
            headers=answer.getheaders(),
            stream=_Body(answer, connection),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason.encode("latin-1")},
        )


def _sent(connection: http.client.HTTPConnection, request: httpx.Request) -> http.client.HTTPResponse:
    """``request`` sent on the open ``connection`` (its headers as httpx made them); the answer's head."""
    try:
        connection.putrequest(
            request.method, request.url.raw_path.decode("ascii"), skip_host=True, skip_accept_encoding=True
        )
        for name, value in request.headers.raw:
            connection.putheader(name.decode("latin-1"), value.decode("latin-1"))
        connection.endheaders(request.read() or None)
        return connection.getresponse()
    except TimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "timed out waiting for the answer") from None
    except (http.client.HTTPException, OSError) as exc:  # a reset, a head that is not HTTP
        raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from None
