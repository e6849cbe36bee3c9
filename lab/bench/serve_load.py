"""The load side of ``chatlog bench serve``: a closed loop of N concurrent clients, latency percentiles,
a cheap HTTP client, and the resident memory and CPU time of another process read from /proc, with its
descendants' (``chatlog serve``'s worker processes) summed in.

The loop (:func:`closed_loop`) runs ``clients`` workers that each send one request, wait for the whole
answer, and send the next, until ``seconds`` have passed (a worker finishes the request it is in). Its
requests/s are completed requests over the time until the last one ended; its latencies are each
request's from the send to the last byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError, one_line

_VM_RSS: Final = re.compile(r"^VmRSS:\s+(\d+)\s+kB", re.MULTILINE)


def stop_server(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """Stop a server process this benchmark started: SIGTERM, ``grace_s`` to exit, then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def wait_answering(
    url: str,
    proc: subprocess.Popen[bytes],
    log_text: Callable[[], str],
    timeout_s: float,
    *,
    name: str,
    answered: Callable[[int], bool] = lambda status: status == 200,
) -> None:
    """Ask ``url`` every 0.3 s until the server ``proc`` started answers it (``answered`` by the status);
    a :class:`ChatlogError` when it exits first (with the end of ``log_text()``) or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = " ".join(log_text().split())[-400:]
            raise ChatlogError(f"{name} exited with {proc.returncode} before answering: {tail}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if answered(response.status):
                    return
        except urllib.error.HTTPError as exc:
            if answered(exc.code):
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise ChatlogError(f"{name} did not answer {url} within {timeout_s:.0f} s")


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank ``pct`` percentile (0 < pct <= 100) of ``values`` (need not be sorted)."""
    if not values:
        raise ValueError("no values")
    if not 0 < pct <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {pct}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


@dataclass
class LoadResult:
    """What a closed loop measured: one latency (seconds) per completed request."""

    clients: int
    wall_s: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    units: int = 0
    """What the requests returned, summed (lines, bytes: whatever the fetch counts)."""
    unfinished: int = 0
    """Requests still in flight when the loop's ``limit_s`` ran out (cancelled)."""

    @property
    def requests(self) -> int:
        return len(self.latencies)

    def summary(self) -> dict[str, Any]:
        """Requests/s and latency percentiles; an unfinished request counts as slower than any finished
        one, so a percentile that falls on one is unknown (None) and ``over_ms`` says it is above the
        time the loop ran."""
        lat = self.latencies
        censored = [*lat, *([math.inf] * self.unfinished)]

        def pct_ms(pct: float) -> float | None:
            if not censored:
                return None
            value = percentile(censored, pct)
            return None if math.isinf(value) else round(value * 1000, 2)

        out: dict[str, Any] = {
            "clients": self.clients,
            "requests": self.requests,
            "errors": self.errors,
            "unfinished": self.unfinished,
            "seconds": round(self.wall_s, 3),
            "requests_per_s": round(self.requests / self.wall_s, 1) if self.wall_s > 0 else None,
            "p50_ms": pct_ms(50),
            "p99_ms": pct_ms(99),
            "max_ms": round(max(lat) * 1000, 2) if lat and not self.unfinished else None,
            "units_per_request": round(self.units / len(lat), 1) if lat else None,
        }
        if self.unfinished:
            out["over_ms"] = round(self.wall_s * 1000, 2)
        if self.first_error:
            out["first_error"] = self.first_error
        return out


async def closed_loop(
    fetch: Callable[[], Awaitable[int]],
    *,
    clients: int,
    seconds: float,
    max_requests: int | None = None,
    limit_s: float | None = None,
) -> LoadResult:
    """``clients`` workers calling ``fetch`` back to back for ``seconds`` (or until ``max_requests``
    were started); ``fetch`` returns a count (lines, bytes) summed into :attr:`LoadResult.units` and
    raises on a failed request (counted in :attr:`LoadResult.errors`, the first one kept). After
    ``limit_s`` (at least ``seconds``) the requests still in flight are cancelled and counted in
    :attr:`LoadResult.unfinished`, and the loop's time is ``limit_s``."""
    if clients < 1:
        raise ValueError(f"clients must be positive, got {clients}")
    result = LoadResult(clients=clients, wall_s=0.0)
    started = 0
    in_flight = 0
    start = time.perf_counter()
    deadline = start + seconds
    last_end = start

    async def worker() -> None:
        nonlocal started, last_end, in_flight
        clock = time.perf_counter
        while clock() < deadline and (max_requests is None or started < max_requests):
            started += 1
            t0 = clock()
            in_flight += 1
            try:
                units = await fetch()
            except Exception as exc:  # a failed request is counted, the load goes on
                result.errors += 1
                if result.first_error is None:
                    result.first_error = one_line(exc, typed=True)
                continue
            finally:
                in_flight -= 1
            end = clock()
            result.latencies.append(end - t0)
            result.units += units
            last_end = max(last_end, end)

    tasks = [asyncio.ensure_future(worker()) for _ in range(clients)]
    timeout = None if limit_s is None else max(limit_s, seconds)
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    if pending:
        result.unfinished = in_flight
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        last_end = start + (timeout or 0.0)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    result.wall_s = last_end - start
    return result


class HttpStatusError(Exception):
    """An answer other than 200."""


@dataclass(frozen=True, slots=True)
class Body:
    """What one GET returned: status, body bytes and newlines in the body, and the body's last bytes."""

    status: int
    size: int
    newlines: int
    tail: bytes


KEEPALIVE_S: Final = 4.0
"""The longest a pooled connection is reused after it went idle: below uvicorn's 5 s, after which the server
closes it. aiohttp takes its pooled connections oldest first, so one client after 32 cycles through all 32:
at a channel day's ~0.4 s a request, each one idle ~13 s, and the server's close and the next request
crossed (a "server disconnected" in one run out of several)."""


class HttpClient:
    """GETs against one base URL over kept-alive connections (at most ``connections``), the body read
    in chunks and counted, never kept. aiohttp when it is installed (cheaper per request), else httpx."""

    def __init__(self, base: str, connections: int, *, timeout_s: float = 300.0) -> None:
        self.base = base.rstrip("/")
        self.connections = connections
        self.timeout_s = timeout_s
        self._session: Any = None
        self._httpx: Any = None

    @property
    def kind(self) -> str:
        return "httpx" if self._httpx is not None else "aiohttp"

    async def __aenter__(self) -> HttpClient:
        try:
            import aiohttp
        except ImportError:
            import httpx

            limits = httpx.Limits(
                max_connections=self.connections,
                max_keepalive_connections=self.connections,
                keepalive_expiry=KEEPALIVE_S,
            )
            self._httpx = httpx.AsyncClient(base_url=self.base, limits=limits, timeout=self.timeout_s)
        else:
            connector = aiohttp.TCPConnector(
                limit=self.connections, limit_per_host=self.connections, keepalive_timeout=KEEPALIVE_S
            )
            self._session = aiohttp.ClientSession(
                base_url=self.base,
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                auto_decompress=False,
            )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        if self._httpx is not None:
            await self._httpx.aclose()

    async def get(self, path: str) -> Body:
        """GET ``path`` (with its query); the body counted as it arrives."""
        size = newlines = 0
        tail = b""
        if self._httpx is not None:
            async with self._httpx.stream("GET", path) as response:
                status = response.status_code
                async for chunk in response.aiter_raw():
                    size += len(chunk)
                    newlines += chunk.count(b"\n")
                    tail = (tail + chunk)[-16:]
            return Body(status, size, newlines, tail)
        async with self._session.get(path, allow_redirects=False) as response:
            status = response.status
            async for chunk in response.content.iter_any():
                size += len(chunk)
                newlines += chunk.count(b"\n")
                tail = (tail + chunk)[-16:]
        return Body(status, size, newlines, tail)

    async def lines(self, path: str) -> int:
        """GET ``path``, raise :class:`HttpStatusError` unless 200; the newlines of its body."""
        body = await self.get(path)
        if body.status != 200:
            raise HttpStatusError(f"GET {path}: {body.status}")
        return body.newlines


def parse_vm_rss(status_text: str) -> int | None:
    """``VmRSS`` in bytes from the text of ``/proc/<pid>/status`` (None: not there, e.g. a zombie)."""
    match = _VM_RSS.search(status_text)
    return int(match.group(1)) * 1024 if match else None


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants: ``chatlog serve``'s worker processes and multiprocessing's resource
    tracker beside them (justlog and Cassandra have none). Empty when ``pid`` is gone."""
    import psutil

    try:
        return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return []


def vm_rss(pid: int, tree: Sequence[int] | None = None) -> int | None:
    """The resident memory of process ``pid`` and its descendants (or of the processes ``tree``), summed,
    in bytes: pages shared between them count once per process. None: all gone."""
    pids = tree if tree is not None else process_tree(pid)
    found = [r for p in pids if (r := _own_vm_rss(p)) is not None]
    return sum(found) if found else None


def _own_vm_rss(pid: int) -> int | None:
    try:
        return parse_vm_rss(Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of process ``pid`` and its descendants (all their threads) in seconds, from
    ``/proc/<pid>/stat``. A descendant that ended between two readings takes its time with it: a difference
    of two readings is a lower bound when a worker was restarted meanwhile. None: all gone."""
    found = [s for p in process_tree(pid) if (s := own_cpu_seconds(p)) is not None]
    return sum(found) if found else None


def own_cpu_seconds(pid: int) -> float | None:
    """utime + stime of process ``pid`` alone (all its threads, none of its children) in seconds."""
    import os

    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """The peak of the resident memory of ``pid`` and its descendants (as they were when the block
    began: the tree is looked up once), read every ``interval_s`` while the block runs."""

    def __init__(self, pid: int, interval_s: float = 0.02) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.before: int | None = None
        self.peak: int | None = None
        self.tree: list[int] = []
        self._task: asyncio.Task[None] | None = None

    def _read(self) -> None:
        rss = vm_rss(self.pid, self.tree)
        if rss is not None:
            self.peak = rss if self.peak is None else max(self.peak, rss)

    async def _poll(self) -> None:
        while True:
            self._read()
            await asyncio.sleep(self.interval_s)

    async def __aenter__(self) -> RssSampler:
        self.tree = process_tree(self.pid)
        self.before = vm_rss(self.pid, self.tree)
        self.peak = self.before
        self._task = asyncio.create_task(self._poll())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._read()
