"""Asking a peer over HTTP (httpx): the raw lines of one request, or :class:`PeerFailed` saying in one
line why there are none (down, too slow, an HTTP error, an answer that is not text)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from core.errors import ChatlogError, one_line
from ingest.importer import bounded_lines

if TYPE_CHECKING:
    import httpx

ANSWER_LIMIT_S: Final = 900.0
"""Longest time one answer may take in all (a peer that trickles a byte now and then is too slow)."""
USER_AGENT: Final = "chatlog-fill"
_NOT_LINES: Final = ("html", "json", "xml", "image/", "audio/", "video/")


class PeerFailed(ChatlogError):
    """One request to the peer gave no lines; the message says why in one line. ``gone``: the peer
    itself failed (down, too slow), so asking it more now is no use."""

    def __init__(self, message: str, *, gone: bool = False) -> None:
        super().__init__(message)
        self.gone = gone


class _Chunks:
    """An answer's body as the stream :func:`ingest.importer.bounded_lines` reads (``read1``)."""

    def __init__(self, chunks: Iterator[bytes], deadline: float, limit_s: float) -> None:
        self._chunks = chunks
        self._deadline = deadline
        self._limit_s = limit_s

    def read1(self, size: int = -1, /) -> bytes:
        del size
        if time.monotonic() >= self._deadline:
            raise PeerFailed(f"the answer took more than {self._limit_s:.0f} s", gone=True)
        for chunk in self._chunks:
            if chunk:
                return chunk
        return b""

    def close(self) -> None:
        pass


def client(timeout_s: float) -> httpx.Client:
    """The client of a fill: ``timeout_s`` to connect and between two reads, redirects followed."""
    import logging

    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request on the command's stderr
    return httpx.Client(
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=True,
        headers={"User-Agent": USER_AGENT, "Accept": "text/plain"},
    )


def raw_lines(http: httpx.Client, url: str, limit_s: float = ANSWER_LIMIT_S) -> Iterator[bytes]:
    """The lines of the answer to ``GET url``, as they arrive; raises :class:`PeerFailed` (also midway)."""
    import httpx

    timeout = http.timeout.read or 0.0
    try:
        with http.stream("GET", url) as answer:
            if answer.status_code != 200:
                body = answer.read()[:300].decode("utf-8", "replace")
                said = f": {one_line(body, 120)}" if body.strip() else ""
                if answer.status_code == 404:  # justlog's and chatlog's answer for a time with no lines
                    raise PeerFailed(f"has no lines of that time (HTTP 404{said})")
                raise PeerFailed(f"answered HTTP {answer.status_code}{said}")
            kind = answer.headers.get("content-type", "").lower()
            if any(word in kind for word in _NOT_LINES):
                raise PeerFailed(f"answered {one_line(kind, 60)}, not raw IRC lines")
            stream = _Chunks(answer.iter_bytes(), time.monotonic() + limit_s, limit_s)
            yield from bounded_lines(stream)
    except httpx.TimeoutException:
        raise PeerFailed(f"did not answer within {timeout:g} s (timed out)", gone=True) from None
    except httpx.ConnectError as exc:
        raise PeerFailed(f"is not reachable: {one_line(exc, 160)}", gone=True) from None
    except httpx.HTTPError as exc:  # a cut connection, a bad answer, too many redirects
        raise PeerFailed(f"failed: {one_line(exc, 160, typed=True)}") from None
