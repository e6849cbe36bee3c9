"""``chatlog bench serve``: the HTTP read side against the reader library, on the local stack (issue 18).

A data set (:mod:`lab.bench.serve_data`: a channel's month, one very busy day, one heavy chatter) is written
into a scratch keyspace (dropped at the end); a real ``chatlog serve`` runs on it as a subprocess (its own
process and CPU), and this process generates the load over loopback (:mod:`lab.bench.serve_load`):

* the latency grid: requests/s and p50/p99 of a user-month and of a channel-day (the quiet day), each as
  text and as ``?json``, at each of ``clients`` concurrent clients for ``seconds``, over HTTP and done
  directly in this process with the same store the service uses (:func:`serve.api.app.open_store`)
  and the same line encoders (:mod:`serve.formats`), so the ratio is HTTP's whole cost;
* streaming: the busy day (``day_lines`` + its share of the month) as text and JSON over HTTP, and
  directly (every line parsed into its event; text lines; JSON): lines/s; the goal's ratio is HTTP text
  against the direct text lines (both make the same lines the same way);
* memory: the server's ``VmRSS`` (``/proc/<pid>/status``, its worker processes' summed in) before, at its
  peak and after one response of the whole month (every line of the data set) and ``parallel`` concurrent
  busy-day responses.

The machine is shared: the 1-minute load average is recorded before and after every measurement.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Final

from core.errors import ChatlogError
from lab.bench.serve_data import BIG_DAY, CHANNEL, MONTH, MONTH_HI, MONTH_LO, QUIET_DAY, USER, YEAR, DataSet
from lab.bench.serve_load import (
    HttpClient,
    LoadResult,
    RssSampler,
    closed_loop,
    cpu_seconds,
    stop_server,
    vm_rss,
    wait_answering,
)

MB: Final = 1_000_000
JUSTLOG: Final = {
    "corpus_lines": 1_500_000,
    "user_month_p99_ms": {"1": 7.2, "32": 487.0},
    "user_month_requests_per_s_32": {"text": 340, "json": 221},
    "user_month_json_p99_ms_32": 614.0,
    "channel_day_lines": 50_000,
    "channel_day_lines_per_s": {"text": 67_000, "json": 38_600},
    "rss_8_concurrent_days_gb": [2.0, 3.7],
}
"""justlog on this machine (issue 18's anchor)."""
GOALS: Final = {
    "user_month_p99_ms_at_32": 50.0,
    "stream_lines_per_s": 80_000,
    "stream_ratio_to_direct": 0.7,
    "rss_growth_mb_for_1m_lines": 50.0,
}
KINDS: Final = ("user_month_text", "user_month_json", "channel_day_text", "channel_day_json")


@dataclass(frozen=True)
class Params:
    """What one run measures; the defaults keep it to ~6 minutes on a shared 2-core machine."""

    month_lines: int = 20_000
    day_lines: int = 200_000
    user_lines: int = 600
    clients: tuple[int, ...] = (1, 32, 128)
    seconds: float = 2.0
    limit_s: float = 8.0
    """A grid cell's requests still running after this are cancelled (counted, their percentiles "over")."""
    parallel: int = 4

    def data(self) -> DataSet:
        return DataSet(month_lines=self.month_lines, day_lines=self.day_lines, user_lines=self.user_lines)


def _day_path(day: Any) -> str:
    return f"/channel/{CHANNEL}/{day.year}/{day.month}/{day.day}"


PATHS: Final = {
    "user_month_text": f"/channel/{CHANNEL}/user/{USER}/{YEAR}/{MONTH}",
    "user_month_json": f"/channel/{CHANNEL}/user/{USER}/{YEAR}/{MONTH}?json",
    "channel_day_text": _day_path(QUIET_DAY),
    "channel_day_json": _day_path(QUIET_DAY) + "?json",
    "big_day_text": _day_path(BIG_DAY),
    "big_day_json": _day_path(BIG_DAY) + "?json",
    "whole_month_text": f"/channel/{CHANNEL}?from={MONTH_LO // 1000}&to={MONTH_HI // 1000 - 1}",
}


def say(message: str) -> None:
    """Progress on stderr (the run takes minutes): the time and the 1-minute load average with it."""
    print(f"{time.strftime('%H:%M:%S')} [load {load_average():.1f}] {message}", file=sys.stderr, flush=True)


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


# -- the server ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def chatlog_command() -> str:
    beside = Path(sys.executable).with_name("chatlog")
    if beside.exists():
        return str(beside)
    import shutil

    found = shutil.which("chatlog")
    if found is None:
        raise ChatlogError("the chatlog command is not installed next to this Python (pip install -e .)")
    return found


@dataclass(frozen=True)
class Server:
    base: str
    pid: int


def _text(log: IO[bytes]) -> str:
    """All a log file open for reading and writing holds (what its process wrote so far)."""
    log.seek(0)
    return log.read().decode(errors="replace")


@contextmanager
def serving(
    keyspace: str, *, start_timeout_s: float = 60.0, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """``chatlog serve --port <free> --keyspace <keyspace>`` as a subprocess, once ``/health`` answers 200;
    stopped with SIGTERM (then SIGKILL) on the way out. Its output goes to a temporary log, shown when it
    fails to start, and its last lines on stderr when the benchmark fails while it runs (a worker that died,
    a traceback: what a client's "server disconnected" cannot tell). ``env``: more of its environment (a
    bench's scratch topics)."""
    port = free_port()
    env = {**os.environ, **(env or {}), "CHATLOG_SERVE_LOG_LEVEL": "warning"}
    with tempfile.NamedTemporaryFile("w+b", prefix="bench-serve-", suffix=".log") as log:
        proc = subprocess.Popen(
            [chatlog_command(), "serve", "--host", "127.0.0.1", "--port", str(port), "--keyspace", keyspace],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_answering(f"{base}/health", proc, lambda: _text(log), start_timeout_s, name="chatlog serve")
            yield Server(base, proc.pid)
        except Exception:
            tail = _text(log).splitlines()[-20:]
            print("chatlog serve's last log lines:", *tail, sep="\n  ", file=sys.stderr)
            raise
        finally:
            stop_server(proc, 30)


# -- direct reads --------------------------------------------------------------------------------------


def _encoders() -> dict[str, Callable[[Any], bytes]]:
    """What the service does with each :class:`~store.line.LogLine` of an answer, by format."""
    from serve.formats import encode_json, json_message, log_text_line

    return {
        "text": lambda line: log_text_line(line).encode() + b"\n",
        "json": lambda line: encode_json(json_message(line.event)),
        "events": _parsed_only,
    }


def _parsed_only(line: Any) -> bytes:
    """Nothing encoded: the line's event only made (what the JSON answers parse)."""
    line.event  # noqa: B018 (the parse is the work measured)
    return b""


class Direct:
    """The reads of :data:`PATHS` done with the service's store in this process."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.encoders = _encoders()

    def events(self, kind: str) -> AsyncIterator[Any]:
        from serve.api.params import day_range, month_range

        if kind.startswith("user_month"):
            lo, hi = month_range(str(YEAR), str(MONTH))
            return self.store.user_lines(CHANNEL, USER, lo, hi)  # type: ignore[no-any-return]
        if kind.startswith("whole_month"):
            lo, hi = MONTH_LO, MONTH_HI
        else:
            day = QUIET_DAY if kind.startswith("channel_day") else BIG_DAY
            lo, hi = day_range(str(day.year), str(day.month), str(day.day))
        return self.store.channel_lines(CHANNEL, lo, hi)  # type: ignore[no-any-return]

    def fetcher(self, kind: str, encoding: str | None = None) -> Callable[[], Awaitable[int]]:
        encode = self.encoders[encoding or kind.rsplit("_", 1)[1]]

        async def fetch() -> int:
            lines = 0
            async for event in self.events(kind):
                encode(event)
                lines += 1
            if not lines:
                raise ChatlogError(f"direct read {kind}: nothing")
            return lines

        return fetch


def _http_fetcher(client: HttpClient, kind: str) -> Callable[[], Awaitable[int]]:
    path = PATHS[kind]
    is_json = kind.endswith("json")

    async def fetch() -> int:
        body = await client.get(path)
        if body.status != 200:
            raise ChatlogError(f"GET {path}: {body.status}")
        if is_json and not body.tail.endswith(b"]}"):
            raise ChatlogError(f"GET {path}: JSON cut short")
        return body.size if is_json else body.newlines

    return fetch


# -- measuring -----------------------------------------------------------------------------------------


async def _measured(
    fetch: Callable[[], Awaitable[int]], clients: int, seconds: float, server_pid: int, **kw: Any
) -> dict[str, Any]:
    load_before = load_average()
    server_cpu, own_cpu = cpu_seconds(server_pid), time.process_time()
    result: LoadResult = await closed_loop(fetch, clients=clients, seconds=seconds, **kw)
    server_cpu_after = cpu_seconds(server_pid)
    out = result.summary()
    n = max(result.requests, 1)
    if server_cpu is not None and server_cpu_after is not None:
        out["server_cpu_ms_per_request"] = round((server_cpu_after - server_cpu) * 1000 / n, 2)
    out["bench_cpu_ms_per_request"] = round((time.process_time() - own_cpu) * 1000 / n, 2)
    out["load_average"] = [load_before, load_average()]
    return out


async def _grid(params: Params, client: HttpClient, direct: Direct, pid: int) -> dict[str, Any]:
    grid: dict[str, Any] = {}
    for kind in KINDS:  # warm both paths (prepared statements, pages, caches) before measuring
        await closed_loop(_http_fetcher(client, kind), clients=2, seconds=0, max_requests=3)
        await closed_loop(direct.fetcher(kind), clients=2, seconds=0, max_requests=3)
    for kind in KINDS:
        grid[kind] = {"http": {}, "direct": {}, "ratio_requests_per_s": {}}
        for clients in params.clients:
            limit = params.limit_s
            http = await _measured(_http_fetcher(client, kind), clients, params.seconds, pid, limit_s=limit)
            if http["unfinished"]:
                await asyncio.sleep(2.0)  # the server drops the cancelled responses before the next cell
            own = await _measured(direct.fetcher(kind), clients, params.seconds, pid, limit_s=limit)
            grid[kind]["http"][str(clients)] = http
            grid[kind]["direct"][str(clients)] = own
            say(
                f"{kind} at {clients} clients: HTTP {http['requests_per_s']} req/s p99 {http['p99_ms']} ms, "
                f"direct {own['requests_per_s']} req/s p99 {own['p99_ms']} ms"
            )
            if own["requests_per_s"]:
                grid[kind]["ratio_requests_per_s"][str(clients)] = round(
                    (http["requests_per_s"] or 0) / own["requests_per_s"], 3
                )
    return grid


async def _stream_once(fetch: Callable[[], Awaitable[int]], pid: int | None) -> dict[str, Any]:
    load_before = load_average()
    sampler = RssSampler(pid) if pid is not None else None
    start = time.perf_counter()
    if sampler is not None:
        async with sampler:
            units = await fetch()
    else:
        units = await fetch()
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {"seconds": round(seconds, 3), "units": units}
    if sampler is not None and sampler.before is not None and sampler.peak is not None:
        out["rss_mb"] = {"before": round(sampler.before / MB, 1), "peak": round(sampler.peak / MB, 1)}
    out["load_average"] = [load_before, load_average()]
    return out


async def _streams(data: DataSet, client: HttpClient, direct: Direct, pid: int) -> dict[str, Any]:
    lines = data.big_day_lines
    runs = {
        "http_text": (_http_fetcher(client, "big_day_text"), pid),
        "http_json": (_http_fetcher(client, "big_day_json"), pid),
        "direct_events": (direct.fetcher("big_day_text", "events"), None),
        "direct_text": (direct.fetcher("big_day_text", "text"), None),
        "direct_json": (direct.fetcher("big_day_json", "json"), None),
    }
    out: dict[str, Any] = {"lines": lines}
    for name, (fetch, sample_pid) in runs.items():
        one = await _stream_once(fetch, sample_pid)
        if name != "http_json" and one["units"] != lines:
            raise ChatlogError(f"streaming the busy day ({name}) gave {one['units']} lines, not {lines}")
        one["lines_per_s"] = round(lines / one["seconds"])
        out[name] = one
        say(f"busy day {name}: {one['lines_per_s']:,} lines/s")
    rate = {name: out[name]["lines_per_s"] for name in runs}
    out["ratio_text_to_direct_events"] = round(rate["http_text"] / rate["direct_events"], 3)
    out["ratio_text_to_direct_text"] = round(rate["http_text"] / rate["direct_text"], 3)
    out["ratio_json_to_direct_json"] = round(rate["http_json"] / rate["direct_json"], 3)
    return out


async def _memory(data: DataSet, client: HttpClient, pid: int, parallel: int) -> dict[str, Any]:
    whole = await _stream_once(_http_fetcher(client, "whole_month_text"), pid)
    await asyncio.sleep(1.0)
    whole["rss_mb"]["after"] = round((vm_rss(pid) or 0) / MB, 1)
    whole["lines"] = whole.pop("units")
    if whole["lines"] != data.total:
        raise ChatlogError(f"the whole month gave {whole['lines']} lines, not {data.total}")
    whole["growth_mb"] = round(whole["rss_mb"]["peak"] - whole["rss_mb"]["before"], 1)
    fetch = _http_fetcher(client, "big_day_text")

    async def many() -> int:
        return sum(await asyncio.gather(*(fetch() for _ in range(parallel))))

    say(f"whole month in one response: RSS growth {whole['growth_mb']} MB")
    together = await _stream_once(many, pid)
    await asyncio.sleep(1.0)
    together["rss_mb"]["after"] = round((vm_rss(pid) or 0) / MB, 1)
    together["lines"] = together.pop("units")
    together["growth_mb"] = round(together["rss_mb"]["peak"] - together["rss_mb"]["before"], 1)
    together["lines_per_s"] = round(together["lines"] / together["seconds"])
    return {"whole_month_one_response": whole, f"{parallel}_concurrent_busy_days": together}


async def _measure(params: Params, keyspace: str, server: Server) -> dict[str, Any]:
    from core.cql import quiet_driver_logs
    from core.settings import load
    from serve.api.app import open_store
    from serve.settings import ServeSettings

    quiet_driver_logs()  # a reconnect under load is the run's business, not a traceback on the terminal
    cluster, store = await asyncio.to_thread(open_store, load(ServeSettings, cassandra_keyspace=keyspace))
    direct = Direct(store)
    try:
        async with HttpClient(server.base, max(params.clients) + params.parallel) as client:
            out: dict[str, Any] = {"client": client.kind}
            out["grid"] = await _grid(params, client, direct, server.pid)
            out["stream"] = await _streams(params.data(), client, direct, server.pid)
            out["memory"] = await _memory(params.data(), client, server.pid, params.parallel)
            return out
    finally:
        await asyncio.to_thread(cluster.shutdown)


def run(settings: Any, params: Params, out: Path) -> dict[str, Any]:
    """The whole benchmark with ``settings`` (sink settings: where Cassandra is); results at ``out``
    (JSON) and next to it (PNG)."""
    from lab.bench import serve_data
    from lab.bench.scratch import scratch_keyspaces
    from lab.results import write_json

    started = time.perf_counter()
    keyspace = f"benchserve{uuid.uuid4().hex[:8]}"
    scratch = settings.model_copy(
        update={"cassandra_keyspace": keyspace, "sink_metrics_port": 0, "cassandra_ttl_s": 0}
    )
    data = params.data()
    result: dict[str, Any] = {
        "params": {**asdict(params), "clients": list(params.clients)},
        "data": {
            "channel": CHANNEL,
            "month": f"{YEAR}-{MONTH:02d}",
            "busy_day": BIG_DAY.isoformat(),
            "busy_day_lines": data.big_day_lines,
            "quiet_day": QUIET_DAY.isoformat(),
            "quiet_day_lines": data.quiet_day_lines,
            "user": USER,
            "user_month_lines": data.user_lines,
            "total_lines": data.total,
        },
        "paths": PATHS,
        "goals": GOALS,
        "justlog": JUSTLOG,
        "cpus": os.cpu_count(),
        "load_average_start": list(os.getloadavg()),
    }
    with scratch_keyspaces(scratch, keyspace):
        say(f"writing {data.total:,} events into scratch keyspace {keyspace}")
        result["data"]["write"] = serve_data.write(scratch, data)
        say(f"written: {result['data']['write']}; starting chatlog serve")
        with serving(keyspace) as server:
            result.update(asyncio.run(_measure(params, keyspace, server)))
    result["load_average_end"] = list(os.getloadavg())
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["verdict"] = verdict(result)
    write_json(out, result)
    plot(result, out.with_suffix(".png"))
    return result


# -- reporting -----------------------------------------------------------------------------------------


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Each goal of the issue: the measured value and whether it is met."""
    out: dict[str, Any] = {}
    month = result["grid"]["user_month_text"]["http"]
    if "32" in month:
        p99 = month["32"]["p99_ms"]
        if p99 is None:
            out["user_month_p99_ms_at_32"] = {"value": f">{month['32']['over_ms']}", "met": False}
        else:
            out["user_month_p99_ms_at_32"] = {"value": p99, "met": p99 <= GOALS["user_month_p99_ms_at_32"]}
    stream = result["stream"]
    rate = stream["http_text"]["lines_per_s"]
    out["stream_lines_per_s"] = {"value": rate, "met": rate >= GOALS["stream_lines_per_s"]}
    ratio = stream["ratio_text_to_direct_text"]  # like for like: both make the text lines
    out["stream_ratio_to_direct"] = {"value": ratio, "met": ratio >= GOALS["stream_ratio_to_direct"]}
    whole = result["memory"]["whole_month_one_response"]
    out["rss_growth_mb"] = {
        "value": whole["growth_mb"],
        "lines": whole["lines"],
        "met": whole["growth_mb"] < GOALS["rss_growth_mb_for_1m_lines"],
    }
    return out


def summary(result: dict[str, Any]) -> str:
    """The numbers as a table (and the goals) for the terminal."""
    lines = [f"client {result['client']}; load average at start {result['load_average_start'][0]:.2f}"]
    lines.append(
        f"{'read':<18}{'clients':>8}{'HTTP req/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'direct req/s':>14}{'p50 ms':>9}{'p99 ms':>9}{'ratio':>7}"
    )
    for kind, cells in result["grid"].items():
        for clients, http in cells["http"].items():
            own = cells["direct"][clients]
            lines.append(
                f"{kind:<18}{clients:>8}{http['requests_per_s']:>12}{_ms(http, 'p50_ms'):>9}"
                f"{_ms(http, 'p99_ms'):>9}{own['requests_per_s']:>14}{_ms(own, 'p50_ms'):>9}"
                f"{_ms(own, 'p99_ms'):>9}{cells['ratio_requests_per_s'].get(clients, '-'):>7}"
            )
    lines.append(
        "(>N: requests still running after the cell's limit were cancelled; the percentile is above N ms)"
    )
    stream = result["stream"]
    rates = ", ".join(
        f"{name.replace('_', ' ')} {stream[name]['lines_per_s']:,}"
        for name in ("http_text", "http_json", "direct_events", "direct_text", "direct_json")
    )
    lines.append(f"busy day ({stream['lines']:,} lines) lines/s: {rates}")
    for name, mem in result["memory"].items():
        rss = mem["rss_mb"]
        lines.append(
            f"server RSS, {name} ({mem['lines']:,} lines): {rss['before']} -> peak {rss['peak']} -> "
            f"{rss['after']} MB (growth {mem['growth_mb']} MB)"
        )
    for goal, got in result["verdict"].items():
        lines.append(f"goal {goal}: {got['value']} {'met' if got['met'] else 'NOT met'}")
    return "\n".join(lines)


def _ms(cell: dict[str, Any], key: str) -> str:
    value = cell[key]
    return f">{cell.get('over_ms', 0):.0f}" if value is None else str(value)


def plot(result: dict[str, Any], path: Path) -> None:
    """p99 and requests/s by clients per read (HTTP solid, direct dashed), and the busy day's lines/s."""
    from lab.results import figure

    with figure(path, 1, 3, figsize=(16, 5)) as (_, axes):
        p99, rps, stream = axes
        for kind, cells in result["grid"].items():
            clients = [int(c) for c in cells["http"]]
            for way, style in (("http", "-"), ("direct", "--")):
                p99.plot(
                    clients,
                    [cells[way][str(c)]["p99_ms"] or cells[way][str(c)].get("over_ms") for c in clients],
                    style,
                    marker="o",
                    label=f"{kind} {way}",
                )
                rps.plot(
                    clients,
                    [cells[way][str(c)]["requests_per_s"] for c in clients],
                    style,
                    marker="o",
                    label=f"{kind} {way}",
                )
        p99.axhline(GOALS["user_month_p99_ms_at_32"], color="grey", linewidth=0.8)
        for ax, title in ((p99, "p99 latency (ms; cut off: the limit)"), (rps, "requests/s")):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("concurrent clients")
            ax.set_title(title)
        rps.legend(fontsize=7)
        names = ["http_text", "http_json", "direct_events", "direct_text", "direct_json"]
        rates = [result["stream"][n]["lines_per_s"] for n in names]
        stream.bar(names, rates)
        stream.axhline(GOALS["stream_lines_per_s"], color="grey", linewidth=0.8)
        stream.set_title(f"busy day streamed ({result['stream']['lines']:,} lines): lines/s")
        stream.tick_params(axis="x", labelrotation=30)
