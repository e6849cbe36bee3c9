"""chatlog/fill/transport.py: httpx's requests over http.client, against a loopback server that writes
exact bytes: the body whole whatever its chunks, in blocks larger than them, and each way an answer can
fail told as httpx's error (so the fill's one-line reasons stay as they were)."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from chatlog.fill.peer import PeerFailed, client, raw_chunks, raw_lines
from chatlog.fill.transport import HttpClientTransport

LINES = [f"@id={i} :u!u@u.tmi.twitch.tv PRIVMSG #forsen :line {i}".encode() for i in range(2000)]
BODY = b"".join(line + b"\n" for line in LINES)


def chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def head(status: str, *headers: str) -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *headers]) + "\r\n\r\n").encode()


@pytest.fixture
def peer() -> Iterator[tuple[str, dict[str, bytes], list[bytes]]]:
    """A server on loopback: each connection's request read, then the bytes ``answers[path]`` written and
    the connection closed (an unknown path: no answer at all, the connection held open)."""
    answers: dict[str, bytes] = {}
    requests: list[bytes] = []
    stop = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                requests.append(request)
                path = request.split(b" ")[1].decode()
                if path in answers:
                    conn.sendall(answers[path])
                else:
                    stop.wait(3)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", answers, requests
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.parametrize("size", [1, 7, 2048, 1 << 20])
def test_a_chunked_day_comes_whole_in_blocks_larger_than_its_chunks(
    peer: tuple[str, dict[str, bytes], list[bytes]], size: int
) -> None:
    base, answers, requests = peer
    answers["/day"] = head("200 OK", "Content-Type: text/plain", "Transfer-Encoding: chunked") + chunked(
        BODY, size
    )
    with client(5.0) as http:
        blocks = list(raw_chunks(http, f"{base}/day"))
        lines = list(raw_lines(http, f"{base}/day"))

    assert b"".join(blocks) == BODY and [line.rstrip(b"\n") for line in lines] == LINES
    assert len(blocks) <= len(BODY) // (1 << 16) + 1  # a block per 64 KiB, not per chunk
    assert requests[0].startswith(b"GET /day HTTP/1.1\r\n") and requests[0].count(b"\r\nHost: ") == 1


def test_a_sized_and_a_gzipped_answer_are_read_as_httpx_reads_them(
    peer: tuple[str, dict[str, bytes], list[bytes]],
) -> None:
    base, answers, _ = peer
    answers["/sized"] = head("200 OK", "Content-Type: text/plain", f"Content-Length: {len(BODY)}") + BODY
    packed = gzip.compress(BODY)
    answers["/gz"] = (
        head("200 OK", "Content-Type: text/plain", "Content-Encoding: gzip", f"Content-Length: {len(packed)}")
        + packed
    )
    with client(5.0) as http:
        assert b"".join(raw_chunks(http, f"{base}/sized")) == BODY
        assert b"".join(raw_chunks(http, f"{base}/gz")) == BODY


def test_a_redirect_is_followed_and_a_wait_is_told(peer: tuple[str, dict[str, bytes], list[bytes]]) -> None:
    base, answers, _ = peer
    answers["/old"] = head("302 Found", "Location: /new", "Content-Length: 0")
    answers["/new"] = head("200 OK", "Content-Type: text/plain", "Content-Length: 6") + b"a b c\n"
    answers["/busy"] = head("429 Too Many Requests", "Retry-After: 7", "Content-Length: 0")
    with client(5.0) as http:
        assert b"".join(raw_chunks(http, f"{base}/old")) == b"a b c\n"
        with pytest.raises(PeerFailed) as failed:
            list(raw_chunks(http, f"{base}/busy"))

    assert failed.value.wait and failed.value.wait_s == 7


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (chunked(BODY, 2048)[:50_000], "cut the answer: RemoteProtocolError: IncompleteRead"),
        (b"ff\r\nshort", "cut the answer: RemoteProtocolError: IncompleteRead"),
        (b"zz\r\n", "cut the answer: RemoteProtocolError: IncompleteRead"),
    ],
)
def test_a_body_cut_or_broken_midway_is_the_peer_away(
    peer: tuple[str, dict[str, bytes], list[bytes]], answer: bytes, said: str
) -> None:
    base, answers, _ = peer
    answers["/cut"] = head("200 OK", "Content-Type: text/plain", "Transfer-Encoding: chunked") + answer
    with client(5.0) as http, pytest.raises(PeerFailed) as failed:
        list(raw_chunks(http, f"{base}/cut"))

    assert failed.value.away and str(failed.value).startswith(said), str(failed.value)


def test_a_peer_that_does_not_answer_or_is_not_there_is_away(
    peer: tuple[str, dict[str, bytes], list[bytes]],
) -> None:
    base, _, _ = peer
    with client(0.5) as http, pytest.raises(PeerFailed) as silent:
        list(raw_chunks(http, f"{base}/nothing"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with client(0.5) as http, pytest.raises(PeerFailed) as gone:
        list(raw_chunks(http, f"http://127.0.0.1:{port}/day"))

    assert silent.value.away and str(silent.value) == "did not answer within 0.5 s (timed out)"
    assert gone.value.away and str(gone.value).startswith("is not reachable: ConnectionRefusedError")


def test_another_scheme_is_refused() -> None:
    with pytest.raises(httpx.UnsupportedProtocol, match="'ftp' is not http or https"):
        HttpClientTransport().handle_request(httpx.Request("GET", "ftp://127.0.0.1/day"))


def test_a_proxy_in_the_environment_keeps_httpx_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    with client(1.0) as http:
        assert not isinstance(http._transport, HttpClientTransport)
    monkeypatch.delenv("HTTP_PROXY")
    with client(1.0) as http:
        assert isinstance(http._transport, HttpClientTransport)
