"""``chatlog bench vs-justlog``: chatlog's read side side by side with justlog's, on the same lines, the
same machine, the same load generator and the same URL lists (issue 35).

It builds nothing: it takes a justlog binary (built from justlog's repository, outside this one). Then:

1. the data set (:mod:`lab.bench.justlog_tree`): one channel, ``days`` x ``lines_per_day`` Twitch
   PRIVMSG lines of ``users`` chatters, written as a justlog log tree;
2. justlog (:mod:`lab.bench.justlog_server`: a generated config on a loopback port, a stand-in for the
   Twitch services it asks at start-up): its own archiver gzips the tree (the past days and month);
3. chatlog: ``chatlog import`` of the same tree (its channel files) into scratch topics, ``chatlog
   sink --backfill`` into a scratch keyspace (both removed at the end), a flush, compactions left to
   settle; then ``chatlog pack`` (the month is over: a deployment's periodic job, as justlog's archiver),
   a flush and Cassandra's configured compactions left to settle: the keyspace as the product leaves it,
   with no manual step; then ``chatlog serve`` on it (it has no cache of whole answers);
   with both servers up (each idle while the other is read), a pass of the grid on each to warm it up,
   then ``passes`` measured passes of each, taken in turn (justlog, chatlog, chatlog, justlog, ...:
   :func:`alternated`), chatlog's keyspace's compactions left to settle before each of its passes; after
   the reads, a major compaction of chatlog's keyspace, whose bytes are reported beside (no operator runs
   one);
4. the grid: a user's month (``/channelid/<id>/userid/<id>/<y>/<m>``, users of ~``user_month_lines``
   lines) at 1 and 32 clients, a channel's day (``/channelid/<id>/<y>/<m>/<d>``) at 1 and 8 clients, each
   as text and ``?json``, by :func:`lab.bench.serve_load.closed_loop` (keep-alive, every body read to its
   end), each URL of a list at most once per cell (a cell ends when its list is used up or after ``seconds``);
   every text answer's line count is checked against the tree. Per cell: requests/s, lines/s, p50/p99,
   the server's peak RSS, CPU ms per request of the server (and Cassandra, for chatlog) from /proc (a
   server's worker processes summed in: ``chatlog serve`` runs one per CPU). A cell of a user's month
   lasts a second or two (its list holds a few hundred users): one pause of either server (a garbage
   collection, a compaction) moves it by tens of percent, so each server runs ``passes`` measured passes
   of the same lists (neither has a cache of whole answers; both have their page caches warm from the
   first pass) and a cell's figures are those of its median pass (by its rate). The passes alternate
   between the servers so that each one's passes sample the whole run, not one stretch of it: what else
   the shared machine does changes during a run (in one run here chatlog's CPU per request of the same
   reads went 3.0, 6.3, 4.6 ms over its three passes while justlog's stayed at 6.6-7.6);
5. storage, in bytes per message: justlog's tree (every file, both copies, gzipped) and chatlog's line
   tables (the blocks and their indexes, :data:`lab.bench.keyspace_disk.LOG_TABLES`: their ``*-Data.db``; and
   every file of the keyspace) after the flush, as the backfill wrote them; after the pack, as they were
   read; and, beside, after the major compaction.

6. the **current** case, after the past one: a second data set that ends now (the current month's days up
   to today, :func:`lab.bench.justlog_tree.write_tree` with ``now``), read where users read the present: a
   user's current month and the channel's current day. justlog's archiver gzips the past days and leaves
   today's file and the month's user files plain; chatlog's keyspace is written as the streaming sink
   writes the present (:mod:`lab.bench.live_writes`: a micro-batch per trigger interval through the sink's
   writer), then packed by the product's hourly routine (``chatlog pack --settle-minutes 60``: the lines of
   today's day and this month sent over an hour ago), compactions as configured left to settle, and read by
   a ``chatlog serve`` on the scratch topics, so its reads of the present also ask Kafka for what
   the sink has not written (nothing: the sink is caught up). The same grid, the same passes; its rows are
   named ``current_...``.

The machine is shared: the 1-minute load average is recorded before and after every cell, and Cassandra's
CPU includes whatever else the shared stack did meanwhile (an upper bound).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError
from lab.bench.justlog_tree import CHANNEL, Tree, TreeParams, Url, tree_bytes, write_tree
from lab.bench.serve import free_port, load_average, say
from lab.bench.serve_load import HttpClient, RssSampler, closed_loop, cpu_seconds, vm_rss

MB: Final = 1_000_000
WARMUP_URLS: Final = 3
"""URLs of each list kept out of the measured cells and used to warm each server up."""


@dataclass(frozen=True)
class Params(TreeParams):
    """What one run measures: the data set and the load; the defaults take a few minutes on a shared 2-core
    machine."""

    user_clients: tuple[int, ...] = (1, 32)
    day_clients: tuple[int, ...] = (1, 8)
    seconds: float = 5.0
    """A cell ends after this long (or when its URL list is used up)."""
    limit_s: float = 60.0
    """A cell's requests still running after this are cancelled (counted; percentiles "over")."""
    passes: int = 3
    """Measured passes of the grid per server (after one to warm up); a cell is its median pass's."""


@dataclass(frozen=True)
class Row:
    """One cell of the grid: what is read, in which format, by how many clients."""

    read: str
    """``user_month`` or ``channel_day``."""
    fmt: str
    """``text`` or ``json``."""
    clients: int

    @property
    def kind(self) -> str:
        """The URL list it reads (:func:`url_lists`)."""
        return f"{self.read}_{self.fmt}"

    @property
    def key(self) -> str:
        return f"{self.kind}_{self.clients}"

    @property
    def label(self) -> str:
        what = "user-month" if self.read == "user_month" else "channel day"
        return f"{what} {self.fmt}, {self.clients} client{'s' if self.clients > 1 else ''}"


CURRENT: Final = "current_"
"""The prefix of the current case's rows in the result's table (``current_user_month_text_1`` ...)."""


def rows(params: Params) -> list[Row]:
    """The grid's cells, user-month first, text before json."""
    out: list[Row] = []
    for read, counts in (("user_month", params.user_clients), ("channel_day", params.day_clients)):
        for fmt in ("text", "json"):
            out.extend(Row(read, fmt, c) for c in counts)
    return out


def url_lists(tree: Tree) -> dict[str, list[Url]]:
    """The URL list of each read and format (``user_month_text`` ...), the same for both servers."""
    return {
        "user_month_text": tree.user_month_urls(),
        "user_month_json": tree.user_month_urls(json=True),
        "channel_day_text": tree.channel_day_urls(),
        "channel_day_json": tree.channel_day_urls(json=True),
    }


def split_warmup(kind: str, urls: Sequence[Url]) -> tuple[list[Url], list[Url]]:
    """(warm-up URLs, measured URLs) of the list of ``kind``: its last :data:`WARMUP_URLS` (a user's
    month) or its last one (a channel's day: there are few), at most half of it."""
    count = WARMUP_URLS if kind.startswith("user_month") else 1
    keep = min(count, len(urls) // 2)
    cut = len(urls) - keep
    return list(urls[cut:]), list(urls[:cut])


# -- measuring -----------------------------------------------------------------------------------------


def _fetcher(client: HttpClient, urls: Sequence[Url], is_json: bool) -> Callable[[], Awaitable[int]]:
    """Each call GETs the next URL of ``urls`` (the loop starts at most ``len(urls)`` of them); the lines
    it answered (checked against the tree for text, the JSON's end for json)."""
    it = iter(urls)

    async def fetch() -> int:
        url = next(it)
        body = await client.get(url.path)
        if body.status != 200:
            raise ChatlogError(f"GET {url.path}: {body.status}")
        if is_json:
            if not body.tail.endswith(b"]}"):
                raise ChatlogError(f"GET {url.path}: JSON cut short")
        elif body.newlines != url.lines:
            raise ChatlogError(f"GET {url.path}: {body.newlines} lines, not {url.lines}")
        return url.lines

    return fetch


async def _cell(
    client: HttpClient, urls: Sequence[Url], row: Row, params: Params, pids: dict[str, int | None]
) -> dict[str, Any]:
    load_before = load_average()
    cpu_before = {name: cpu_seconds(pid) if pid else None for name, pid in pids.items()}
    server = pids.get("server")
    sampler = RssSampler(server) if server else None
    fetch = _fetcher(client, urls, row.fmt == "json")
    run = closed_loop(
        fetch, clients=row.clients, seconds=params.seconds, max_requests=len(urls), limit_s=params.limit_s
    )
    if sampler is not None:
        async with sampler:
            result = await run
    else:
        result = await run
    out = result.summary()
    n = max(result.requests, 1)
    out["lines_per_s"] = round(result.units / result.wall_s) if result.wall_s > 0 else None
    cpu: dict[str, float] = {}
    for name, pid in pids.items():
        after = cpu_seconds(pid) if pid else None
        before = cpu_before[name]
        if before is not None and after is not None:
            cpu[name] = round((after - before) * 1000 / n, 2)
    out["cpu_ms_per_request"] = cpu
    out["cpu_ms_per_request_total"] = round(sum(cpu.values()), 2)
    if sampler is not None and sampler.peak is not None:
        out["server_rss_mb_peak"] = round(sampler.peak / MB, 1)
    cassandra = pids.get("cassandra")
    if cassandra:
        out["cassandra_rss_mb"] = round((vm_rss(cassandra) or 0) / MB, 1)
    out["urls"] = len(urls)
    out["load_average"] = [load_before, load_average()]
    return out


async def grid(
    base: str, lists: dict[str, list[Url]], params: Params, pids: dict[str, int | None], name: str
) -> dict[str, Any]:
    """One pass of every :func:`rows` cell against the server at ``base``."""
    out: dict[str, Any] = {}
    connections = max(*params.user_clients, *params.day_clients)
    async with HttpClient(base, connections) as client:
        for kind, urls in lists.items():  # warm up: connections, caches, the code paths
            warm, _ = split_warmup(kind, urls)
            fetch = _fetcher(client, warm, kind.endswith("json"))
            await closed_loop(fetch, clients=1, seconds=60, max_requests=len(warm))
        for row in rows(params):
            _, urls = split_warmup(row.kind, lists[row.kind])
            cell = await _cell(client, urls, row, params, pids)
            if cell["errors"]:
                raise ChatlogError(
                    f"{name} {row.label}: {cell['errors']} errors, first {cell.get('first_error')}"
                )
            out[row.key] = cell
            say(
                f"{name} {row.label}: {cell['requests_per_s']} req/s, {cell['lines_per_s']:,} lines/s, "
                f"p99 {cell['p99_ms']} ms, CPU {cell['cpu_ms_per_request_total']} ms/req"
            )
            if cell["unfinished"]:
                await asyncio.sleep(2.0)
    return out


def _metric(key: str) -> str:
    """What a cell is ranked and compared by: requests/s for a user's month, lines/s for a channel's day."""
    return "requests_per_s" if key.startswith("user_month") else "lines_per_s"


def median_grid(passes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each cell of the measured ``passes`` as its median pass gave it (by :func:`_metric`; of an even
    number, the lower middle one), with every pass's rate beside it (``pass_rates``)."""
    out: dict[str, Any] = {}
    for key in passes[0]:
        cells = [p[key] for p in passes if key in p]
        metric = _metric(key)
        ranked = sorted(cells, key=lambda cell: cell[metric] or 0)
        out[key] = {**ranked[(len(ranked) - 1) // 2], "pass_rates": [cell[metric] for cell in cells]}
    return out


@dataclass
class Side:
    """One server of the comparison, up and ready: where it answers, the processes whose CPU counts, its
    result so far (``out``: its passes go in there), and what to do before each of its measured passes."""

    name: str
    base: str
    pids: dict[str, int | None]
    out: dict[str, Any]
    before_pass: Callable[[], None] = lambda: None


PassRunner = Callable[[Side, str], dict[str, Any]]
"""One pass of the grid against a side, under a label: its cells."""


def _grid_pass(lists: dict[str, list[Url]], params: Params) -> PassRunner:
    return lambda side, label: asyncio.run(grid(side.base, lists, params, side.pids, label))


def alternated(sides: Sequence[Side], passes: int, run_pass: PassRunner) -> None:
    """Each side's warm-up pass, then its ``passes`` measured ones, the sides taken in turn: pass n of one,
    then of the other, in the reverse order on every second pass (A B B A A B ...), so a machine that
    drifts during the run (its speed moves these figures by tens of percent from one half hour to the
    next) weighs on both sides alike rather than on the one measured last. Into each side's ``out``:
    ``pass_1`` (the warm-up), ``passes`` and ``grid`` (the median, :func:`median_grid`)."""
    taken: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
    for n in range(passes + 1):
        for side in sides if n % 2 == 0 else list(reversed(sides)):
            if n == 0:
                side.out["pass_1"] = run_pass(side, f"{side.name} pass 1")
                continue
            side.before_pass()
            taken[side.name].append(run_pass(side, f"{side.name} pass {n + 1}"))
    for side in sides:
        side.out["passes"] = taken[side.name]
        side.out["grid"] = median_grid(taken[side.name])


def compared(
    justlog: AbstractContextManager[Side],
    chatlog: AbstractContextManager[Side],
    passes: int,
    lists: dict[str, list[Url]],
    params: Params,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both servers up (justlog's set up first), their passes taken in turn (:func:`alternated`); each
    one's result once both are down."""
    with justlog as theirs, chatlog as ours:
        alternated((theirs, ours), passes, _grid_pass(lists, params))
    return theirs.out, ours.out


# -- justlog -------------------------------------------------------------------------------------------


@contextmanager
def justlog_side(binary: Path, tree: Tree, work: Path, name: str = "justlog") -> Iterator[Side]:
    """justlog up on the tree, its own archiver done; after the passes, its storage into the side's
    ``out``."""
    from lab.bench.justlog_server import running_justlog, wait_archived

    with running_justlog(
        binary, tree.root, work, channel_id=tree.channel_id, channel=CHANNEL, port=free_port()
    ) as (justlog, standin):
        say(f"justlog up (pid {justlog.pid}); its archiver gzips {len(tree.files())} files")
        archive_s = wait_archived(tree.files(), justlog.pid, timeout_s=120 + tree.lines / 1000)
        say(f"archived in {archive_s:.1f} s; justlog RSS {(vm_rss(justlog.pid) or 0) / MB:.0f} MB")
        out: dict[str, Any] = {"archive_s": round(archive_s, 1)}
        yield Side(name, justlog.base, {"server": justlog.pid}, out)
        out["server_rss_mb_after"] = round((vm_rss(justlog.pid) or 0) / MB, 1)
        out["stand_in_asked"] = dict(standin.asked)
    size = tree_bytes(tree.root)
    out["storage"] = {"bytes": size, "bytes_per_message": round(size / tree.lines, 1)}


# -- chatlog -------------------------------------------------------------------------------------------


def _chatlog(args: list[str], env: dict[str, str], timeout_s: float) -> str:
    from lab.bench.serve import chatlog_command

    proc = subprocess.run(
        [chatlog_command(), *args], env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if proc.returncode != 0:
        tail = " ".join((proc.stderr + proc.stdout).split())[-600:]
        raise ChatlogError(f"chatlog {args[0]} exited with {proc.returncode}: {tail}")
    return " ".join((proc.stderr + proc.stdout).split())[-400:]


def load_chatlog(scratch: Any, tree: Tree, work: Path) -> dict[str, Any]:
    """``chatlog import`` of the tree (its channel files) into the scratch topics, then ``chatlog sink
    --backfill`` of them into the scratch keyspace; what each said and took."""
    env = {
        **os.environ,
        **scratch.topic_env(),
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": scratch.kafka_bootstrap_servers,
        "CHATLOG_CASSANDRA_KEYSPACE": scratch.cassandra_keyspace,
        "CHATLOG_CASSANDRA_TTL_S": "0",
        "CHATLOG_SINK_CHECKPOINT": str(work / "checkpoint"),
        "CHATLOG_SINK_METRICS_PORT": "0",
    }
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    time.sleep(1.0)
    start = time.perf_counter()
    imported = _chatlog(["import", "--justlog", "--no-progress", str(tree.root)], env, 3600)
    import_s = time.perf_counter() - start
    say(f"imported in {import_s:.0f} s: {imported[-160:]}")
    start = time.perf_counter()
    backfill = _chatlog(
        ["sink", "--backfill", "--from", since, "--keyspace", scratch.cassandra_keyspace], env, 7200
    )
    backfill_s = time.perf_counter() - start
    say(f"backfilled in {backfill_s:.0f} s: {backfill[-200:]}")
    return {
        "import_s": round(import_s, 1),
        "import_said": imported,
        "backfill_s": round(backfill_s, 1),
        "backfill_said": backfill,
    }


def pack_chatlog(scratch: Any, settle_minutes: int = 0) -> dict[str, Any]:
    """``chatlog pack`` of the scratch keyspace (what a deployment's periodic job does, as justlog's archiver
    gzips the past; ``settle_minutes`` 0: everything just written is settled); what it said and took."""
    env = {**os.environ, "CHATLOG_CASSANDRA_KEYSPACE": scratch.cassandra_keyspace}
    start = time.perf_counter()
    said = _chatlog(["pack", "--settle-minutes", str(settle_minutes)], env, 3600)
    pack_s = time.perf_counter() - start
    say(f"packed in {pack_s:.0f} s: {said[-200:]}")
    return {"pack_s": round(pack_s, 1), "pack_said": said}


def chatlog_storage(data_dir: Path, keyspace: str, tree: Tree) -> dict[str, Any]:
    """chatlog's bytes on disk: the line tables' ``*-Data.db`` (:func:`lab.bench.keyspace_disk.disk_usage`)
    and every file of the keyspace, per message."""
    from lab.bench.keyspace_disk import disk_usage, keyspace_files

    usage = disk_usage(data_dir, keyspace, tree.lines, tree.raw_bytes / tree.lines)
    every = sum(size for _, size in keyspace_files(data_dir, keyspace))
    return {
        "data_db_bytes": usage["data_db_bytes"],
        "bytes_per_message": usage["bytes_per_message"],
        "tables": usage["tables"],
        "keyspace_bytes": every,
        "keyspace_bytes_per_message": round(every / tree.lines, 1),
    }


@contextmanager
def chatlog_side(settings: Any, tree: Tree, work: Path) -> Iterator[Side]:
    """chatlog's keyspace loaded from the tree, flushed, compactions settled, packed, settled again, and
    ``chatlog serve`` on it; after the passes, a major compaction and its storage beside (no operator runs
    one)."""
    from core.cql import connect
    from core.settings import StackSettings, load
    from lab.bench.keyspace_disk import flush_and_compact
    from lab.bench.sink_data import fresh

    data_dir = load(StackSettings).state_dir / "cassandra" / "data"
    with fresh(settings, f"vsjl{uuid.uuid4().hex[:8]}", work) as scratch:
        keyspace = scratch.cassandra_keyspace
        out: dict[str, Any] = {"keyspace": keyspace, "answer_cache": "none (chatlog serve has none)"}
        out["load"] = load_chatlog(scratch, tree, work)
        cluster, session = connect(scratch, timeout=60)
        try:
            _flushed(out, session, keyspace, data_dir, tree)
            _pack_settled(out, scratch, session, data_dir, tree, 0)
            say(f"packed, as the product leaves it: {out['storage_packed']['bytes_per_message']} B/message")
            with _serving_side(out, scratch, session, data_dir, "chatlog") as side:
                yield side
            say("beside, after the reads: a major compaction of the line tables (no operator runs one)")
            out["compact_s"] = round(flush_and_compact(session, keyspace, data_dir, 900), 1)
            out["storage_compacted"] = chatlog_storage(data_dir, keyspace, tree)
        finally:
            cluster.shutdown()


def _flushed(out: dict[str, Any], session: Any, keyspace: str, data_dir: Path, tree: Tree) -> None:
    """A flush, compactions left to settle, the bytes as written: into ``out``."""
    from lab.bench.keyspace_disk import flush, settle

    out["flush_s"] = round(flush(session, keyspace, data_dir, 300), 1)
    out["settle_s"] = [round(settle(session, keyspace, data_dir, 600, tell=say), 1)]
    out["storage"] = chatlog_storage(data_dir, keyspace, tree)
    say(f"chatlog keyspace as written: {out['storage']['bytes_per_message']} B/message (Data.db)")


def _pack_settled(
    out: dict[str, Any], scratch: Any, session: Any, data_dir: Path, tree: Tree, settle_minutes: int
) -> None:
    """``chatlog pack`` (``settle_minutes``), a flush, compactions left to settle, the bytes: into ``out``."""
    from lab.bench.keyspace_disk import flush, settle

    keyspace = scratch.cassandra_keyspace
    out["pack"] = pack_chatlog(scratch, settle_minutes)
    flush(session, keyspace, data_dir, 300)
    out["settle_s"].append(round(settle(session, keyspace, data_dir, 600, tell=say), 1))
    out["storage_packed"] = chatlog_storage(data_dir, keyspace, tree)


@contextmanager
def _serving_side(
    out: dict[str, Any],
    scratch: Any,
    session: Any,
    data_dir: Path,
    name: str,
    env: dict[str, str] | None = None,
) -> Iterator[Side]:
    """``chatlog serve`` on the scratch keyspace (``env``: more of its environment) as a side whose every
    measured pass waits for the keyspace's compactions to settle first."""
    from core.settings import StackSettings, load
    from lab.bench.keyspace_disk import settle
    from lab.bench.serve import serving
    from lab.stack.process import read_pid

    keyspace = scratch.cassandra_keyspace
    cassandra = read_pid(load(StackSettings).state_dir / "run" / "cassandra.pid")

    def settled() -> None:
        out["settle_s"].append(round(settle(session, keyspace, data_dir, 600, tell=say), 1))

    with serving(keyspace, env=env) as server:
        yield Side(name, server.base, {"server": server.pid, "cassandra": cassandra}, out, settled)
        out["server_rss_mb_after"] = round((vm_rss(server.pid) or 0) / MB, 1)


ROUTINE_SETTLE_MINUTES: Final = 60
"""The settle time of the product's hourly ``chatlog pack`` (``k8s/base/pack-cronjob.yaml``)."""


@contextmanager
def chatlog_current_side(settings: Any, tree: Tree, work: Path) -> Iterator[Side]:
    """chatlog on a current tree: written as the streaming sink writes the present, a flush, compactions
    left to settle; the product's hourly ``chatlog pack`` (settle 60 minutes: today's day and this month's
    user-months packed up to an hour ago; the past days, written just now, left for a later run), a flush,
    compactions left to settle; then ``chatlog serve`` on the scratch topics; the bytes as written and
    after the pack beside."""
    from core.cql import connect
    from core.settings import StackSettings, load
    from lab.bench.live_writes import write_live
    from lab.bench.sink_data import fresh

    data_dir = load(StackSettings).state_dir / "cassandra" / "data"
    with fresh(settings, f"vsjlnow{uuid.uuid4().hex[:8]}", work) as scratch:
        keyspace = scratch.cassandra_keyspace
        out: dict[str, Any] = {"keyspace": keyspace}
        say(f"writing {tree.lines:,} lines as the streaming sink writes the present")
        out["load"] = write_live(scratch, tree)
        say(
            f"written in {out['load']['seconds']:.0f} s: {out['load']['micro_batches']:,} micro-batches, "
            f"rows {out['load']['written'].get('rows', {})}"
        )
        cluster, session = connect(scratch, timeout=60)
        try:
            _flushed(out, session, keyspace, data_dir, tree)
            _pack_settled(out, scratch, session, data_dir, tree, ROUTINE_SETTLE_MINUTES)
            env = {**scratch.topic_env(), "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": scratch.kafka_bootstrap_servers}
            with _serving_side(out, scratch, session, data_dir, "chatlog now", env) as side:
                yield side
        finally:
            cluster.shutdown()


def data_of(tree: Tree, lists: dict[str, list[Url]]) -> dict[str, Any]:
    """What a data set holds, for the result."""
    return {
        "channel": CHANNEL,
        "channel_id": tree.channel_id,
        "year": tree.year,
        "month": tree.month,
        "days": tree.days,
        "current": tree.current,
        "lines": tree.lines,
        "users": len(tree.user_lines),
        "line_bytes_mean": round(tree.raw_bytes / tree.lines, 1),
        "user_month_urls": len(lists["user_month_text"]),
        "user_month_lines_mean": round(
            sum(u.lines for u in lists["user_month_text"]) / max(len(lists["user_month_text"]), 1), 1
        ),
        "channel_day_urls": len(lists["channel_day_text"]),
        "warmup_urls_per_list": WARMUP_URLS,
        "examples": {kind: urls[0].path for kind, urls in lists.items() if urls},
    }


# -- the comparison ------------------------------------------------------------------------------------


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs == 0:
        return None
    return round(ours / theirs, 3)


def ratio_table(
    justlog: dict[str, Any], chatlog: dict[str, Any], params: Params, *, current: bool = False
) -> list[dict[str, Any]]:
    """One row per cell (chatlog over justlog: requests/s for a user's month, lines/s for a channel's
    day; above 1 chatlog is faster), then storage after the flush and compacted (chatlog over justlog:
    below 1 chatlog takes less). Cells missing on either side are left out. ``current``: the current
    case's cells (rows named :data:`CURRENT` ..., labelled "current ..."), without storage."""
    table: list[dict[str, Any]] = []
    for row in rows(params):
        j, c = justlog["grid"].get(row.key), chatlog["grid"].get(row.key)
        if j is None or c is None:
            continue
        metric = _metric(row.key)
        table.append(
            {
                "row": f"{CURRENT}{row.key}" if current else row.key,
                "label": f"current {row.label}" if current else row.label,
                "short": f"{'now ' if current else ''}{row.fmt}, {row.clients}",
                "metric": metric,
                "justlog": j[metric],
                "chatlog": c[metric],
                "ratio": _ratio(c[metric], j[metric]),
                "p99_ms": {"justlog": j["p99_ms"], "chatlog": c["p99_ms"]},
                "cpu_ms_per_request": {
                    "justlog": j["cpu_ms_per_request_total"],
                    "chatlog": c["cpu_ms_per_request_total"],
                },
                "server_rss_mb_peak": {
                    "justlog": j.get("server_rss_mb_peak"),
                    "chatlog": c.get("server_rss_mb_peak"),
                },
                "load_average": {"justlog": j["load_average"], "chatlog": c["load_average"]},
            }
        )
    if current:
        return table
    j_bytes = justlog["storage"]["bytes_per_message"]
    for key, field, label, short in (
        (
            "storage",
            "bytes_per_message",
            "storage after a flush (rows as written), B/message",
            "after a flush",
        ),
        (
            "storage_packed",
            "bytes_per_message",
            "storage packed, compactions as configured (as read), B/message",
            "packed",
        ),
        (
            "storage_compacted",
            "bytes_per_message",
            "storage packed and major-compacted (beside), B/message",
            "compacted",
        ),
    ):
        if key not in chatlog:
            continue
        c_bytes = chatlog[key][field]
        table.append(
            {
                "row": key,
                "label": label,
                "short": short,
                "metric": "bytes_per_message",
                "justlog": j_bytes,
                "chatlog": c_bytes,
                "ratio": _ratio(c_bytes, j_bytes),
            }
        )
    return table


PHASES: Final = ("past", "current")


def run(
    settings: Any,
    binary: Path,
    params: Params,
    out: Path,
    work: Path | None = None,
    phases: Sequence[str] = PHASES,
) -> dict[str, Any]:
    """The whole comparison (``settings``: sink settings, where Kafka and Cassandra are): the past case and
    the current one (``phases``); results at ``out`` (JSON) and next to it (PNG). The trees and the scratch
    state live in ``work`` (a temporary directory by default, removed at the end)."""
    from core.settings import StackSettings, load
    from lab.bench.deployed_stack import require_deployed
    from lab.results import write_json

    deployed = require_deployed(load(StackSettings).state_dir, "chatlog bench vs-justlog")
    started = time.perf_counter()
    with workdir(work) as root:
        result: dict[str, Any] = {
            "params": {
                **asdict(params),
                "user_clients": list(params.user_clients),
                "day_clients": list(params.day_clients),
            },
            "phases": list(phases),
            "justlog_binary": str(binary),
            "cpus": os.cpu_count(),
            "cassandra_jvm_options": deployed["jvm_options"],
            "cassandra_timer_slack_ns": deployed["timer_slack_ns"],
            "shared_machine": True,
            "load_average_start": list(os.getloadavg()),
        }
        if "past" in phases:
            say(f"writing the tree ({params.days} days x {params.lines_per_day:,} lines) under {root}")
            tree = write_tree(root / "logs", params)
            result["data"] = data_of(tree, url_lists(tree))
            result["justlog"], result["chatlog"] = compared(
                justlog_side(binary, tree, root / "justlog"),
                chatlog_side(settings, tree, root / "chatlog"),
                params.passes,
                url_lists(tree),
                params,
            )
        if "current" in phases:
            now = datetime.now(UTC)
            say(f"writing the current tree (up to {params.days} days x {params.lines_per_day:,} lines)")
            tree = write_tree(root / "current" / "logs", params, now=now)
            result["current"] = {"data": data_of(tree, url_lists(tree))}
            result["current"]["justlog"], result["current"]["chatlog"] = compared(
                justlog_side(binary, tree, root / "current" / "justlog", "justlog now"),
                chatlog_current_side(settings, tree, root / "current" / "chatlog"),
                params.passes,
                url_lists(tree),
                params,
            )
    result["table"] = []
    if "past" in phases:
        result["table"] += ratio_table(result["justlog"], result["chatlog"], params)
    if "current" in phases:
        now_case = result["current"]
        result["table"] += ratio_table(now_case["justlog"], now_case["chatlog"], params, current=True)
    result["load_average_end"] = list(os.getloadavg())
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_json(out, result)
    plot(result, out.with_suffix(".png"))
    return result


@contextmanager
def workdir(work: Path | None) -> Iterator[Path]:
    """``work`` (made if missing), else a temporary directory removed at the end."""
    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
        yield work
        return
    root = Path(tempfile.mkdtemp(prefix="chatlog-vs-justlog-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- reporting -----------------------------------------------------------------------------------------


def _value(row: dict[str, Any]) -> Callable[[str], str]:
    def fmt(side: str) -> str:
        value = row[side]
        if value is None:
            return "-"
        if row["metric"] == "requests_per_s":
            text = f"{value:,.1f} req/s"
        elif row["metric"] == "lines_per_s":
            text = f"{value / 1000:,.1f}k lines/s"
        else:
            return f"{value:,.1f} B"
        p99 = row["p99_ms"][side]
        return f"{text}, p99 {'>limit' if p99 is None else f'{p99:,.0f}'} ms"

    return fmt


def _data_line(data: dict[str, Any], name: str) -> str:
    return (
        f"{name}: {data['lines']:,} lines ({len(data['days'])} days of {data['year']}-{data['month']:02d}), "
        f"{data['users']:,} users, mean line {data['line_bytes_mean']} B; {data['user_month_urls']} "
        f"user-month URLs (~{data['user_month_lines_mean']} lines), {data['channel_day_urls']} day URLs"
    )


def summary(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table (justlog, chatlog, ratio per row) and what else was measured."""
    now_case = result.get("current")
    lines = [
        *([_data_line(result["data"], "past")] if "data" in result else []),
        *([_data_line(now_case["data"], "current (ends now)")] if now_case else []),
        f"shared machine, load average at start {result['load_average_start'][0]:.2f}",
        "",
        "| read | justlog | chatlog | ratio | CPU ms/req justlog / chatlog | load avg j / c |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["table"]:
        fmt = _value(row)
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        if row["metric"] == "bytes_per_message":
            lines.append(f"| {row['label']} | {fmt('justlog')} | {fmt('chatlog')} | {ratio} | | |")
            continue
        cpu = row["cpu_ms_per_request"]
        load = row["load_average"]
        lines.append(
            f"| {row['label']} | {fmt('justlog')} | {fmt('chatlog')} | {ratio} | "
            f"{cpu['justlog']} / {cpu['chatlog']} | {load['justlog'][0]:.1f} / {load['chatlog'][0]:.1f} |"
        )
    if now_case:
        load = now_case["chatlog"]["load"]
        lines += [
            "",
            f"current: chatlog written as the streaming sink writes ({load['micro_batches']:,} micro-batches "
            f"of {load['trigger_ms'] / 1000:g} s in {load['seconds']} s: rows "
            f"{load['written'].get('rows', {})}); "
            f"{now_case['chatlog']['storage']['bytes_per_message']} B/message as written; "
            + (
                f"the hourly pack in {now_case['chatlog']['pack']['pack_s']} s: "
                f"{now_case['chatlog']['pack']['pack_said'][-160:]}; "
                if "pack" in now_case["chatlog"]
                else ""
            )
            + f"justlog archived its past days in {now_case['justlog']['archive_s']} s",
        ]
    if "chatlog" not in result:
        return "\n".join(lines)
    j, c = result["justlog"], result["chatlog"]
    j_rss = [cell.get("server_rss_mb_peak") or 0 for cell in j["grid"].values()]
    c_rss = [cell.get("server_rss_mb_peak") or 0 for cell in c["grid"].values()]
    lines += [
        "",
        f"server RSS peak under load: justlog {max(j_rss):,.0f} MB, chatlog serve {max(c_rss):,.0f} MB",
        "storage: justlog's tree (both gzipped copies, every file); chatlog's line tables' Data.db "
        "(after a flush: the blocks as the backfill wrote them; packed by chatlog pack, compactions as "
        "configured: as served here; major-compacted after the reads: beside)",
        f"chatlog keyspace, every file: {c['storage']['keyspace_bytes_per_message']} B/message; "
        f"loaded by import {c['load']['import_s']} s + backfill {c['load']['backfill_s']} s; "
        f"packed in {c.get('pack', {}).get('pack_s', '-')} s; "
        f"compactions settled {c['settle_s']} s",
        f"justlog archived the tree in {j['archive_s']} s; "
        f"its Twitch stand-in was asked {j['stand_in_asked']}",
    ]
    rates = [
        f"{key}: {j['grid'][key]['pass_rates']} | {c['grid'][key]['pass_rates']}"
        for key in c["grid"]
        if key.startswith("user_month") and key in j["grid"] and "pass_rates" in c["grid"][key]
    ]
    if rates:
        lines.append(
            "each cell is its median pass's; user-month req/s per pass, justlog | chatlog: "
            + "; ".join(rates)
        )
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    """Per read: justlog's and chatlog's bars side by side with the ratio over them; then storage."""
    from lab.results import figure

    table = result["table"]
    panels = (
        ("requests_per_s", "a user's month: requests/s"),
        ("lines_per_s", "a channel's day: lines/s"),
        ("bytes_per_message", "storage: bytes per message"),
    )
    with figure(path, 1, 3, figsize=(17, 5)) as (_, axes):
        for ax, (metric, title) in zip(axes, panels, strict=True):
            picked = [r for r in table if r["metric"] == metric]
            xs = list(range(len(picked)))
            width = 0.38
            ax.bar([x - width / 2 for x in xs], [r["justlog"] or 0 for r in picked], width, label="justlog")
            ax.bar([x + width / 2 for x in xs], [r["chatlog"] or 0 for r in picked], width, label="chatlog")
            for x, r in zip(xs, picked, strict=True):
                top = max(r["justlog"] or 0, r["chatlog"] or 0)
                if r["ratio"] is not None:
                    ax.annotate(f"{r['ratio']:.2f}x", (x, top), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(xs)
            ax.set_xticklabels([r["short"] for r in picked], fontsize=8)
            ax.set_title(title)
            ax.legend(fontsize=8)
