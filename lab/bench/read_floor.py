"""``chatlog bench read-floor``: what a current user-month answer costs at the least, beside justlog and
``chatlog serve``, in one run (issue 49's current-month goal: chatlog ≥ 1.0x justlog on a user's month
that is still being written).

The data set and both servers are ``chatlog bench vs-justlog``'s current case
(:func:`lab.bench.vs_justlog.chatlog_current_side`, :func:`lab.bench.vs_justlog.justlog_side`): a month
that ends now, justlog's user files plain, chatlog's keyspace as the streaming sink writes the present and
the hourly pack leaves it. Beside them, the floors of the parts of a chatlog answer, each measured by the
same load generator on the same URLs (each URL at most once per cell):

* ``floor http+read``: :mod:`lab.bench.read_floor_app` in ``read`` mode: a bare ASGI callable on
  ``chatlog serve``'s server stack and worker count, one raw-driver query per request (the frames of the
  month's part 0, returned as stored): HTTP in Python plus one Cassandra read, nothing else;
* ``floor http``: the same server answering a constant body of the mean answer's size: HTTP in Python alone;
* ``floor read``: the same query by the raw driver in this process, no HTTP: one Cassandra read alone;
* ``floor cassandra``: a native-protocol OPTIONS on a ready connection over a raw socket
  (:mod:`lab.bench.cql_ping`): no driver, no query, no read: the least any request to Cassandra costs.

A cell: requests/s, p50/p99, CPU ms per request of the server (its workers summed), of Cassandra and of
this process (the load generator, and the reads themselves for ``floor read``). The sides take their passes
in turn (:func:`lab.bench.vs_justlog.alternated`); a cell is its median pass's.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError
from lab.bench.cql_ping import Pinger
from lab.bench.justlog_tree import Tree, TreeParams, Url, write_tree
from lab.bench.read_floor_app import QUERY, read_frames, user_month_params
from lab.bench.serve import free_port, say
from lab.bench.serve_load import (
    HttpClient,
    closed_loop,
    cpu_seconds,
    own_cpu_seconds,
    stop_server,
    wait_answering,
)
from lab.bench.vs_justlog import Side, alternated, split_warmup

FLOOR_APP: Final = "lab.bench.read_floor_app:app"
KIND: Final = "user_month_text"
JUSTLOG: Final = "justlog now"
CHATLOG: Final = "chatlog now"
HTTP_READ: Final = "floor http+read"
HTTP: Final = "floor http"
READ: Final = "floor read"
PING: Final = "floor cassandra"
SIDES: Final = (JUSTLOG, CHATLOG, HTTP_READ, HTTP, READ, PING)


@dataclass(frozen=True)
class Params(TreeParams):
    """The data set (a month that ends now) and the load."""

    clients: tuple[int, ...] = (1, 32)
    seconds: float = 5.0
    passes: int = 5


Fetch = Callable[[Url], Awaitable[int]]
CassandraAt = tuple[str, int, tuple[str, str] | None]
"""Where :class:`lab.bench.cql_ping.Pinger` finds the node: host, port, login (user, password) if any."""


def cassandra_at(settings: Any) -> CassandraAt:
    """The first contact point of ``settings`` and its login."""
    return settings.contact_points[0], settings.cassandra_port, settings.cassandra_login


async def _cell(
    fetch: Fetch, urls: Sequence[Url], clients: int, seconds: float, pids: dict[str, int]
) -> dict[str, Any]:
    it = iter(urls)
    me = os.getpid()

    def used(name: str, pid: int) -> float | None:  # this process alone: its servers are its children
        return own_cpu_seconds(pid) if pid == me else cpu_seconds(pid)

    before = {name: used(name, pid) for name, pid in pids.items()}
    result = await closed_loop(
        lambda: fetch(next(it)), clients=clients, seconds=seconds, max_requests=len(urls), limit_s=60.0
    )
    out = result.summary()
    if result.errors:
        raise ChatlogError(f"{result.errors} errors, first {result.first_error}")
    n = max(result.requests, 1)
    cpu: dict[str, float] = {}
    for name, pid in pids.items():
        after, was = used(name, pid), before[name]
        if after is not None and was is not None:
            cpu[name] = round((after - was) * 1000 / n, 3)
    out["cpu_ms_per_request"] = cpu
    out["cpu_ms_per_request_total"] = round(sum(cpu.values()), 3)
    return out


def _http_fetch(client: HttpClient) -> Fetch:
    async def fetch(url: Url) -> int:
        body = await client.get(url.path)
        if body.status != 200:
            raise ChatlogError(f"GET {url.path}: {body.status}")
        return body.size

    return fetch


def _read_fetch(session: Any, query: Any) -> Fetch:
    """The floor read: :func:`lab.bench.read_floor_app.read_frames`, here."""

    async def fetch(url: Url) -> int:
        frames = await read_frames(session, query, user_month_params(url.path))
        return sum(map(len, frames))

    return fetch


def _ping_fetch(pinger: Pinger) -> Fetch:
    """The floor of a Cassandra request: one OPTIONS, whatever the URL."""

    async def fetch(_url: Url) -> int:
        await pinger.ping()
        return 0

    return fetch


def _fetch_of(side: str, client: HttpClient, reader: tuple[Any, Any], pinger: Pinger) -> Fetch:
    """What a request of ``side`` is: the in-process read, the ping, or a GET of the side's server."""
    if side == READ:
        return _read_fetch(*reader)
    if side == PING:
        return _ping_fetch(pinger)
    return _http_fetch(client)


def _pass(
    side: Side, urls: list[Url], params: Params, reader: tuple[Any, Any], cassandra: CassandraAt
) -> dict[str, Any]:
    pids = {name: pid for name, pid in side.pids.items() if pid}

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        warm, measured = split_warmup(KIND, urls)
        pinger = Pinger(*cassandra)
        async with HttpClient(side.base or "http://127.0.0.1:1", max(params.clients)) as client:
            fetch = _fetch_of(side.name, client, reader, pinger)
            try:
                for url in warm:
                    await fetch(url)
                for clients in params.clients:
                    cell = await _cell(fetch, measured, clients, params.seconds, pids)
                    out[f"{KIND}_{clients}"] = cell
                    say(
                        f"{side.name}, {clients} client(s): {cell['requests_per_s']} req/s, "
                        f"p99 {cell['p99_ms']} ms, CPU {cell['cpu_ms_per_request']} ms/req"
                    )
            finally:
                pinger.close()
        return out

    return asyncio.run(run())


@contextmanager
def floor_server(
    mode: str, workers: int, env: dict[str, str], body_bytes: int = 0
) -> Iterator[tuple[str, int]]:
    """:mod:`lab.bench.read_floor_app` under uvicorn on ``workers`` processes: (base URL, pid)."""
    port = free_port()
    environ = {
        **os.environ,
        **env,
        "CHATLOG_FLOOR_MODE": mode,
        "CHATLOG_FLOOR_BODY_BYTES": str(body_bytes),
    }
    args = [sys.executable, "-m", "uvicorn", FLOOR_APP, "--host", "127.0.0.1", "--port", str(port)]
    args += ["--workers", str(workers), "--log-level", "warning"]
    with tempfile.NamedTemporaryFile("w+b", prefix="bench-floor-", suffix=".log") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=environ)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_answering(
                f"{base}/health", proc, lambda: Path(log.name).read_text(errors="replace"), 60, name=FLOOR_APP
            )
            yield base, proc.pid
        finally:
            stop_server(proc, 30)


def _mean_body_bytes(base: str, urls: Sequence[Url]) -> int:
    async def sizes() -> list[int]:
        async with HttpClient(base, 1) as client:
            return [(await client.get(url.path)).size for url in urls]

    return round(statistics.fmean(asyncio.run(sizes())))


def run(settings: Any, binary: Path, params: Params, out: Path, work: Path) -> dict[str, Any]:
    """The whole measurement; its result at ``out``."""
    from core.cql import connect
    from core.settings import StackSettings, load
    from lab.bench.deployed_stack import require_deployed
    from lab.bench.vs_justlog import chatlog_current_side, data_of, justlog_side, url_lists
    from lab.results import write_json
    from serve.settings import ServeSettings

    deployed = require_deployed(load(StackSettings).state_dir, "chatlog bench read-floor")
    started = time.perf_counter()
    say(f"writing the current tree (up to {params.days} days x {params.lines_per_day:,} lines)")
    tree: Tree = write_tree(work / "logs", params, now=datetime.now(UTC))
    lists = url_lists(tree)
    urls = lists[KIND]
    workers = load(ServeSettings).worker_count()
    result: dict[str, Any] = {
        "params": {**asdict(params), "clients": list(params.clients)},
        "cpus": os.cpu_count(),
        "serve_workers": workers,
        "cassandra_jvm_options": deployed["jvm_options"],
        "cassandra_timer_slack_ns": deployed["timer_slack_ns"],
        "data": data_of(tree, lists),
    }
    with ExitStack() as stack:
        justlog = stack.enter_context(justlog_side(binary, tree, work / "justlog", JUSTLOG))
        chatlog = stack.enter_context(chatlog_current_side(settings, tree, work / "chatlog"))
        keyspace = chatlog.out["keyspace"]
        env = {"CHATLOG_CASSANDRA_KEYSPACE": keyspace}
        cassandra = chatlog.pids.get("cassandra")
        body = _mean_body_bytes(justlog.base, urls)
        result["data"]["user_month_text_bytes_mean"] = body
        read_base, read_pid = stack.enter_context(floor_server("read", workers, env))
        http_base, http_pid = stack.enter_context(floor_server("http", workers, env, body))
        cluster, session = connect(settings)
        stack.callback(cluster.shutdown)
        query = session.prepare(QUERY.format(keyspace=keyspace))
        me = os.getpid()
        chatlog.pids["client"] = me
        justlog.pids["client"] = me
        sides = [
            justlog,
            chatlog,
            Side(HTTP_READ, read_base, {"server": read_pid, "cassandra": cassandra, "client": me}, {}),
            Side(HTTP, http_base, {"server": http_pid, "client": me}, {}),
            Side(READ, "", {"cassandra": cassandra, "client": me}, {}),
            Side(PING, "", {"cassandra": cassandra, "client": me}, {}),
        ]
        at = cassandra_at(settings)
        alternated(sides, params.passes, lambda side, _label: _pass(side, urls, params, (session, query), at))
        result["sides"] = {s.name: {"grid": s.out["grid"], "passes": s.out["passes"]} for s in sides}
        result["chatlog_settle_s"] = chatlog.out.get("settle_s")
    result["table"] = table(result["sides"], params)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_json(out, result)
    return result


def table(sides: dict[str, Any], params: Params) -> dict[str, dict[str, dict[str, Any]]]:
    """By clients (``"1"``, ``"32"``), by side: its rate, its ratio to justlog's, p50/p99 and CPU per
    request by process."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for clients in params.clients:
        key = f"{KIND}_{clients}"
        theirs = sides[JUSTLOG]["grid"][key]["requests_per_s"]
        by_side = out.setdefault(str(clients), {})
        for name in SIDES:
            cell = sides[name]["grid"][key]
            rate = cell["requests_per_s"]
            by_side[name] = {
                "requests_per_s": rate,
                "vs_justlog": round(rate / theirs, 3) if rate and theirs else None,
                "p50_ms": cell["p50_ms"],
                "p99_ms": cell["p99_ms"],
                "cpu_ms_per_request": cell["cpu_ms_per_request"],
            }
    return out


def summary(result: dict[str, Any]) -> str:
    """The table as text: a line per clients and side."""
    lines = ["user-month text, current month: requests/s (x justlog), p99, CPU ms per request by process"]
    for clients, by_side in result["table"].items():
        for name, row in by_side.items():
            cpu = ", ".join(f"{k} {v}" for k, v in row["cpu_ms_per_request"].items())
            lines.append(
                f"  {clients:>2} client(s)  {name:<16} {row['requests_per_s']:>8} "
                f"({row['vs_justlog']}x)  p99 {row['p99_ms']} ms  CPU {cpu}"
            )
    return "\n".join(lines)
