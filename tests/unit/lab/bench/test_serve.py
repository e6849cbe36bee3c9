"""The pure parts of ``chatlog bench serve``: percentiles, the closed load loop, the HTTP client against a
stub server on loopback, /proc readings, the data set's counts and the goals' verdict."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from core.errors import ChatlogError
from lab.bench.serve import GOALS, verdict
from lab.bench.serve_data import BIG_DAY, CHANNEL, MONTH_HI, MONTH_LO, QUIET_DAY, USER, DataSet
from lab.bench.serve_load import (
    HttpClient,
    HttpStatusError,
    RssSampler,
    closed_loop,
    cpu_seconds,
    parse_vm_rss,
    percentile,
    process_tree,
    vm_rss,
    wait_answering,
)

BUSY_CHILD = """
import sys, time
block = bytearray(64 * 1024 * 1024)
block[::4096] = b"x" * len(block[::4096])  # resident
end = time.process_time() + 0.5
while time.process_time() < end:
    pass
print("ready", flush=True)
sys.stdin.read()
"""


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unsorted on purpose
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([3.0], 1) == 3.0
    assert percentile([1.0, 2.0], 50) == 1.0


@pytest.mark.parametrize("pct", [0, -1, 101])
def test_percentile_refuses_out_of_range(pct: float) -> None:
    with pytest.raises(ValueError, match="percentile"):
        percentile([1.0], pct)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_closed_loop_keeps_n_requests_in_flight_and_counts_them() -> None:
    in_flight = peak = 0

    async def fetch() -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return 7

    result = asyncio.run(closed_loop(fetch, clients=5, seconds=0.2))
    assert peak == 5
    assert result.requests >= 5 * 5  # ~20 each in 0.2 s; loose for a busy machine
    assert result.units == 7 * result.requests
    assert all(lat >= 0.009 for lat in result.latencies)
    summary = result.summary()
    assert summary["clients"] == 5 and summary["errors"] == 0
    assert summary["requests_per_s"] == pytest.approx(result.requests / result.wall_s, rel=0.01)
    assert 9 <= summary["p50_ms"] <= summary["p99_ms"] <= summary["max_ms"]


def test_closed_loop_counts_errors_and_keeps_the_first() -> None:
    calls = 0

    async def fetch() -> int:
        nonlocal calls
        calls += 1
        if calls % 2:
            raise RuntimeError(f"boom {calls}\nsecond line")
        return 1

    result = asyncio.run(closed_loop(fetch, clients=1, seconds=10, max_requests=6))
    assert calls == 6
    assert result.requests == 3 and result.errors == 3
    assert result.first_error == "RuntimeError: boom 1 second line"
    assert result.summary()["first_error"] == result.first_error


def test_closed_loop_with_no_time_still_honours_max_requests_only_once_started() -> None:
    async def fetch() -> int:
        return 1

    assert asyncio.run(closed_loop(fetch, clients=3, seconds=0)).requests == 0
    with pytest.raises(ValueError, match="clients"):
        asyncio.run(closed_loop(fetch, clients=0, seconds=1))


def test_closed_loop_cancels_what_runs_past_its_limit_and_reports_percentiles_as_over() -> None:
    calls = 0

    async def fetch() -> int:
        await asyncio.sleep(10)
        return 1

    async def fast_then_slow() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.001 if calls <= 100 else 10)
        return 1

    result = asyncio.run(closed_loop(fetch, clients=4, seconds=0.05, limit_s=0.2))
    assert result.requests == 0 and result.unfinished == 4
    assert result.wall_s == pytest.approx(0.2)
    summary = result.summary()
    assert summary["p50_ms"] is None and summary["p99_ms"] is None and summary["over_ms"] == 200.0
    mixed = asyncio.run(closed_loop(fast_then_slow, clients=1, seconds=5, limit_s=1.0)).summary()
    assert mixed["requests"] == 100 and mixed["unfinished"] == 1
    assert mixed["p50_ms"] is not None and mixed["p99_ms"] is not None  # 1 of 101 unfinished: p99 known
    assert mixed["max_ms"] is None


_CHUNKS = [b"line one\nline two\n", b"line three\n"]


@asynccontextmanager
async def _stub_server(status: int = 200) -> AsyncIterator[str]:
    """A keep-alive HTTP/1.1 server on loopback answering every GET with a chunked 3-line body."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    return
                headers = "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                writer.write(f"HTTP/1.1 {status} X\r\n{headers}".encode())
                for chunk in _CHUNKS:
                    writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("without_aiohttp", [False, True])
def test_http_client_counts_a_streamed_body_over_kept_alive_connections(
    without_aiohttp: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if without_aiohttp:
        monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp raises ImportError: httpx

    async def go() -> tuple[Any, int, str]:
        async with _stub_server() as base, HttpClient(base, connections=4) as client:
            body = await client.get("/channel/x/2024/3/1?json")
            result = await closed_loop(lambda: client.lines("/a"), clients=4, seconds=0.2)
            return body, result.units // max(result.requests, 1), client.kind

    body, lines_each, kind = asyncio.run(go())
    assert body.status == 200
    assert body.size == sum(len(c) for c in _CHUNKS)
    assert body.newlines == 3
    assert body.tail.endswith(b"line three\n")
    assert lines_each == 3
    assert kind == ("httpx" if without_aiohttp else "aiohttp")


def test_http_client_lines_refuses_other_than_200() -> None:
    async def go() -> None:
        async with _stub_server(status=404) as base, HttpClient(base, connections=1) as client:
            await client.lines("/missing")

    with pytest.raises(HttpStatusError, match="404"):
        asyncio.run(go())


def test_vm_rss_parses_proc_status() -> None:
    text = "Name:\tpython\nVmPeak:\t  999 kB\nVmRSS:\t   12345 kB\nThreads:\t1\n"
    assert parse_vm_rss(text) == 12345 * 1024
    assert parse_vm_rss("Name:\tzombie\n") is None
    own = vm_rss(os.getpid())
    assert own is not None and own > 1_000_000
    assert vm_rss(2**22 + 12345) is None  # above pid_max's default: no such process


def test_cpu_seconds_grows_with_work() -> None:
    before = cpu_seconds(os.getpid())
    assert before is not None
    sum(i * i for i in range(3_000_000))
    after = cpu_seconds(os.getpid())
    assert after is not None and after > before
    assert cpu_seconds(2**22 + 12345) is None


def test_cpu_and_rss_sum_the_process_and_its_children() -> None:
    """As ``chatlog serve``'s workers are counted with it."""
    import subprocess

    me = os.getpid()
    cpu_before = cpu_seconds(me)
    child = subprocess.Popen(
        [sys.executable, "-c", BUSY_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        assert child.pid in process_tree(me)
        alone, with_child = vm_rss(me, [me]), vm_rss(me)
        assert alone is not None and with_child is not None
        assert with_child - alone > 60 * 1024 * 1024
        cpu_after = cpu_seconds(me)
        assert cpu_before is not None and cpu_after is not None
        assert cpu_after - cpu_before >= 0.4  # the child's busy half second
    finally:
        child.kill()
        child.wait()
    assert process_tree(2**22 + 12345) == []


def test_rss_sampler_sees_a_peak_above_before_when_memory_is_taken() -> None:
    async def go() -> RssSampler:
        async with RssSampler(os.getpid(), interval_s=0.005) as sampler:
            block = bytearray(64 * 1024 * 1024)
            block[::4096] = b"x" * len(block[::4096])  # touch every page: resident
            await asyncio.sleep(0.05)
            del block
        return sampler

    sampler = asyncio.run(go())
    assert sampler.before is not None and sampler.peak is not None
    assert sampler.peak - sampler.before > 32 * 1024 * 1024


def test_data_set_counts_match_its_events() -> None:
    data = DataSet(month_lines=3000, day_lines=2000, user_lines=40)
    events = list(data.events())
    assert len(events) == data.total == 5040
    assert len({e.message_id for e in events}) == len(events)
    assert {e.channel for e in events} == {CHANNEL}
    assert all(MONTH_LO <= e.sent_at < MONTH_HI for e in events)

    def on(day: Any) -> int:
        lo = int(MONTH_LO + (day.day - 1) * 86_400_000)
        return sum(1 for e in events if lo <= e.sent_at < lo + 86_400_000)

    assert on(BIG_DAY) == data.big_day_lines
    assert on(QUIET_DAY) == data.quiet_day_lines
    heavy = [e for e in events if e.user_login == USER]
    assert len(heavy) == 40
    assert all(f":{USER}!{USER}@" in e.raw for e in heavy)
    ids: dict[str, set[str | None]] = {}
    for e in events:
        ids.setdefault(e.user_login or "", set()).add(e.user_id)
    assert all(len(v) == 1 for v in ids.values())  # one id per login, as on Twitch


def _result(p99: float, rate: int, direct: int, growth: float) -> dict[str, Any]:
    return {
        "grid": {"user_month_text": {"http": {"32": {"p99_ms": p99}}}},
        "stream": {
            "http_text": {"lines_per_s": rate},
            "ratio_text_to_direct_text": round(rate / direct, 3),
        },
        "memory": {"whole_month_one_response": {"growth_mb": growth, "lines": 1000}},
    }


def test_verdict_meets_and_misses_the_goals() -> None:
    good = verdict(_result(GOALS["user_month_p99_ms_at_32"], 90_000, 100_000, 10.0))
    assert all(goal["met"] for goal in good.values())
    bad = verdict(_result(51.0, 79_999, 200_000, 50.0))
    assert not any(goal["met"] for goal in bad.values())
    assert bad["stream_ratio_to_direct"]["value"] == 0.4


_FAKE_SERVE = """#!{python}
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
print("INFO: a worker died: boom", flush=True)

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def test_serving_shows_the_servers_last_log_lines_when_the_benchmark_fails(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import lab.bench.serve

    fake = tmp_path / "chatlog"
    fake.write_text(_FAKE_SERVE.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setattr(lab.bench.serve, "chatlog_command", lambda: str(fake))
    with pytest.raises(RuntimeError, match="cell failed"), lab.bench.serve.serving("ks", start_timeout_s=20):
        raise RuntimeError("cell failed")
    assert "a worker died: boom" in capsys.readouterr().err


def test_a_server_that_exits_before_answering_is_one_error_with_the_end_of_its_log() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait(30)
    with pytest.raises(ChatlogError, match=r"^fake exited with 3 before answering: cannot bind port 1$"):
        wait_answering("http://127.0.0.1:1/health", proc, lambda: "cannot bind\n  port 1\n", 5, name="fake")
