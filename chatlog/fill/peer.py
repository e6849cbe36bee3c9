"""Asking a peer over HTTP (httpx): the days it lists, the raw lines of one request, or :class:`PeerFailed`
saying in one line why there are none (down, too slow, rate-limited, an HTTP error, an answer that is not
what was asked)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Final

from core.errors import ChatlogError, one_line
from ingest.importer import bounded_lines

if TYPE_CHECKING:
    import httpx

ANSWER_LIMIT_S: Final = 900.0
"""Longest time one answer may take in all (a peer that trickles a byte now and then is too slow)."""
LIST_LIMIT_BYTES: Final = 16 << 20
"""Largest ``/list`` answer read (a channel logged for 30 years lists ~11k days in ~400 kB)."""
USER_AGENT: Final = "chatlog-fill"
_NOT_LINES: Final = ("html", "json", "xml", "image/", "audio/", "video/")
WAIT_STATUSES: Final = (429, 503)
"""Answers that ask the client to come back later (with ``Retry-After``, or without)."""


class PeerFailed(ChatlogError):
    """One request to the peer gave no answer; the message says why in one line. ``away``: the peer itself
    failed (down, too slow, the connection cut), so it may come back; ``wait``: the peer asked to be asked
    again later (HTTP 429 or 503), after ``wait_s`` seconds when it said (``Retry-After``); ``status``: the
    HTTP status it answered, if any."""

    def __init__(
        self,
        message: str,
        *,
        away: bool = False,
        wait: bool = False,
        wait_s: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.away = away
        self.wait = wait
        self.wait_s = wait_s
        self.status = status


def retry_after_s(value: str | None, now_s: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds, or an HTTP date); None when absent or
    unreadable."""
    if not value or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now_s is None else now_s))


class Chunks:
    """Chunks as the stream :func:`ingest.importer.bounded_lines` reads (``read1``)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def read1(self, size: int = -1, /) -> bytes:
        del size
        return next(self._chunks, b"")

    def close(self) -> None:
        pass


def client(timeout_s: float) -> httpx.Client:
    """The client of a fill: ``timeout_s`` to connect and between two reads, redirects followed; its
    requests sent by :class:`chatlog.fill.transport.HttpClientTransport` (answers read in large blocks),
    unless the environment names a proxy (httpx's own transport goes through it)."""
    import logging
    import urllib.request

    import httpx

    from chatlog.fill.transport import HttpClientTransport

    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request on the command's stderr
    proxied = any(scheme != "no" for scheme in urllib.request.getproxies())
    return httpx.Client(
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=True,
        headers={"User-Agent": USER_AGENT, "Accept": "text/plain"},
        transport=None if proxied else HttpClientTransport(),
    )


def _failure(exc: httpx.HTTPError, timeout_s: float) -> PeerFailed:
    """What a request's (or its body's) transport failure says of the peer."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return PeerFailed(f"did not answer within {timeout_s:g} s (timed out)", away=True)
    if isinstance(exc, httpx.ConnectError):
        return PeerFailed(f"is not reachable: {one_line(exc, 160)}", away=True)
    if isinstance(exc, httpx.TransportError):  # cut midway (the peer stopped, a proxy restarted)
        return PeerFailed(f"cut the answer: {one_line(exc, 160, typed=True)}", away=True)
    return PeerFailed(f"failed: {one_line(exc, 160, typed=True)}")  # too many redirects, a bad body


def _checked(answer: httpx.Response, missing: str) -> None:
    """Nothing when ``answer`` is a 200; else :class:`PeerFailed` saying what it is (its body read for
    that). ``missing``: what a 404 means."""
    if answer.status_code == 200:
        return
    body = answer.read()[:300].decode("utf-8", "replace")
    said = f": {one_line(body, 120)}" if body.strip() else ""
    status = answer.status_code
    if status == 404:  # justlog's, rustlog's and chatlog's answer for nothing logged
        raise PeerFailed(f"{missing} (HTTP 404{said})", status=status)
    if status in WAIT_STATUSES:
        wait_s = retry_after_s(answer.headers.get("retry-after"))
        after = f", Retry-After {wait_s:.0f} s" if wait_s is not None else ""
        raise PeerFailed(f"asks to wait (HTTP {status}{after})", wait=True, wait_s=wait_s, status=status)
    raise PeerFailed(f"answered HTTP {status}{said}", status=status)


def open_answer(http: httpx.Client, url: str, *, missing: str) -> httpx.Response:
    """The answer to ``GET url``, its head read and its status checked: a 200, its body not read yet (the
    caller closes it); anything else and every transport failure is :class:`PeerFailed`. ``missing``: what
    a 404 means."""
    import httpx

    timeout_s = http.timeout.read or 0.0
    try:
        answer = http.send(http.build_request("GET", url), stream=True)
    except httpx.HTTPError as exc:
        raise _failure(exc, timeout_s) from None
    try:
        _checked(answer, missing)
    except httpx.HTTPError as exc:
        answer.close()
        raise _failure(exc, timeout_s) from None
    except BaseException:
        answer.close()
        raise
    return answer


@contextmanager
def _asking(http: httpx.Client, url: str, *, missing: str) -> Iterator[httpx.Response]:
    """``GET url`` streamed, its status checked: 200 is yielded; anything else and every transport
    failure (also while the body is read in the block) is :class:`PeerFailed`. ``missing``: what a 404
    means."""
    import httpx

    answer = open_answer(http, url, missing=missing)
    try:
        yield answer
    except httpx.HTTPError as exc:
        raise _failure(exc, http.timeout.read or 0.0) from None
    finally:
        answer.close()


def open_raw(http: httpx.Client, url: str) -> httpx.Response:
    """:func:`open_answer` of a day's raw lines: also :class:`PeerFailed` when the answer is not text."""
    answer = open_answer(http, url, missing="has no lines of that time")
    kind = answer.headers.get("content-type", "").lower()
    if any(word in kind for word in _NOT_LINES):
        answer.close()
        raise PeerFailed(f"answered {one_line(kind, 60)}, not raw IRC lines")
    return answer


def body_chunks(answer: httpx.Response, timeout_s: float, limit_s: float = ANSWER_LIMIT_S) -> Iterator[bytes]:
    """The body of an open ``answer`` as it arrives, then the answer closed; :class:`PeerFailed` when the
    reading fails or takes more than ``limit_s`` in all (``timeout_s``: the client's, for the message)."""
    import httpx

    deadline = time.monotonic() + limit_s
    try:
        for chunk in answer.iter_bytes():
            if time.monotonic() >= deadline:
                raise PeerFailed(f"the answer took more than {limit_s:.0f} s", away=True)
            if chunk:
                yield chunk
    except httpx.HTTPError as exc:
        raise _failure(exc, timeout_s) from None
    finally:
        answer.close()


def raw_chunks(http: httpx.Client, url: str, limit_s: float = ANSWER_LIMIT_S) -> Iterator[bytes]:
    """The body of the answer to ``GET url`` as it arrives; raises :class:`PeerFailed` (also midway)."""
    yield from body_chunks(open_raw(http, url), http.timeout.read or 0.0, limit_s)


def answer_lines(
    answer: httpx.Response, timeout_s: float, limit_s: float = ANSWER_LIMIT_S
) -> Iterator[bytes]:
    """The lines of an open ``answer``'s body (:func:`body_chunks`), as :func:`ingest.importer.bounded_lines`
    reads them; raises :class:`PeerFailed` (also midway)."""
    yield from bounded_lines(Chunks(body_chunks(answer, timeout_s, limit_s)))


def raw_lines(http: httpx.Client, url: str, limit_s: float = ANSWER_LIMIT_S) -> Iterator[bytes]:
    """The lines of the answer to ``GET url``, as they arrive; raises :class:`PeerFailed` (also midway)."""
    yield from answer_lines(open_raw(http, url), http.timeout.read or 0.0, limit_s)


def json_answer(http: httpx.Client, url: str, *, missing: str) -> Any | None:
    """The JSON the peer answers to ``GET url``; None for a 404 (nothing there); :class:`PeerFailed` for
    anything else that is not JSON."""
    try:
        with _asking(http, url, missing=missing) as answer:
            body = b""
            for chunk in answer.iter_bytes():
                body += chunk
                if len(body) > LIST_LIMIT_BYTES:
                    raise PeerFailed(f"answered more than {LIST_LIMIT_BYTES >> 20} MB to {url}")
    except PeerFailed as exc:
        if exc.status == 404:
            return None
        raise
    try:
        return json.loads(body)
    except ValueError:
        said = one_line(body[:200].decode("utf-8", "replace"), 80)
        raise PeerFailed(f"answered {url} with something that is not JSON: {said!r}") from None
