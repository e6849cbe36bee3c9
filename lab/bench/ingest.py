"""``chatlog bench ingest``: one ingester's throughput, IRC socket to Kafka acknowledgement.

Setup: fresh topics; the channels of the parser benchmark's Twitch corpus (:func:`lab.bench.parse.
corpus`: 300 channels, ~400-byte lines with ~17 tags, ~2 % non-chat) registered; a fake IRC server in a
separate process that registers the ingester's connections, echoes their JOINs and, once every channel
is joined, blasts the corpus (cycled) down each connection as fast as the sockets take it, every line
to the connection that joined its channel. The ingester is the real ``chatlog ingest`` process.

Measured:

* ``ingest``: chat events acknowledged by Kafka per second, from the first byte blasted to the moment
  the ingester's ``chatlog_ingest_events_delivered`` counter (sampled every 0.1 s) reached the number of
  chat events sent; plus the ingester's CPU seconds. Best of ``repeat`` runs (each a fresh ingester
  process and fake server); every run's rate is kept.
* ``raw``: a bare confluent-kafka producer in this process sending the same encoded records (same keys,
  same producer settings), per compression codec (best of two), from the first ``produce`` to the end
  of ``flush``, with the bytes on the wire per event.

The machine's load average is recorded: on a shared 2-core machine the numbers move with it.

The InspIRCd of the local stack is not in the path: a single-threaded IRC server relaying 100k lines/s
would measure the server, not the ingester.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from confluent_kafka import Producer

from core.errors import ChatlogError
from core.irc_parse import parse_line, parse_message
from core.kafka_admin import ensure_topics
from core.logins import login_of
from core.settings import load
from ingest.producer import producer_config
from ingest.registry import Registry
from ingest.settings import IngestSettings
from lab import extras
from lab.bench.loading import produce
from lab.bench.parse import corpus
from lab.bench.scratch import scratch_topics
from lab.results import figure, write_json
from lab.scrape import scrape
from schemas.chat_event import encode

CORPUS_LINES: Final = 20_000
_CODECS: Final = ("zstd", "lz4", "none")
_RAW_REPEAT: Final = 2  # best of


# -- the fake IRC server (child process) -----------------------------------------------------------


def _channel(line: str) -> str | None:
    at = line.find(" #")
    if at < 0:
        return None
    end = line.find(" ", at + 2)
    return line[at + 2 : end if end > 0 else None].lower()


class _FakeServer:
    """Just enough IRC for the pool: CAP, 001, JOIN echoes, PONG; then the blast."""

    def __init__(self, lines: Sequence[str], chat: Sequence[bool], total: int, channels: set[str]) -> None:
        self.lines, self.chat, self.total, self.channels = lines, chat, total, channels
        self.conns: list[tuple[asyncio.StreamWriter, set[str]]] = []
        self.all_joined = asyncio.Event()

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        joined: set[str] = set()
        self.conns.append((writer, joined))
        nick = "x"
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while raw := await reader.readline():
                msg = parse_message(raw.decode(errors="replace").rstrip("\r\n"))
                cmd, params = msg.command, msg.params
                if cmd == "CAP" and len(params) > 1 and params[0].upper() == "REQ":
                    writer.write(f":fake CAP * ACK :{' '.join(params[1:])}\r\n".encode())
                elif cmd == "NICK" and params:
                    nick = params[0]
                elif cmd == "USER":
                    writer.write(f":fake 001 {nick} :welcome\r\n".encode())
                elif cmd == "PING":
                    writer.write(f":fake PONG fake :{params[-1] if params else ''}\r\n".encode())
                elif cmd == "JOIN" and params:
                    for ch in params[0].split(","):
                        writer.write(f":{nick}!u@h JOIN {ch}\r\n".encode())
                        joined.add(login_of(ch))
                    if set().union(*(j for _, j in self.conns)) >= self.channels:
                        self.all_joined.set()
                elif cmd == "QUIT":
                    break

    async def blast(self) -> tuple[float, float, int, int]:
        """Send ``total`` lines over the connections; returns (start, end, lines, chat events)."""
        owner: dict[str, int] = {}
        for i, (_, joined) in enumerate(self.conns):
            for ch in joined:
                owner.setdefault(ch, i)
        per_conn: list[list[int]] = [[] for _ in self.conns]
        for idx, line in enumerate(self.lines):
            chan = _channel(line)
            per_conn[owner.get(chan, 0) if chan is not None else 0].append(idx)
        start = time.time()
        results = await asyncio.gather(
            *(self._send(self.conns[i][0], idxs) for i, idxs in enumerate(per_conn) if idxs)
        )
        return start, time.time(), sum(r[0] for r in results), sum(r[1] for r in results)

    async def _send(self, writer: asyncio.StreamWriter, idxs: list[int]) -> tuple[int, int]:
        quota = round(self.total * len(idxs) / len(self.lines))
        blob = "".join(self.lines[i] + "\r\n" for i in idxs).encode()
        blob_events = sum(self.chat[i] for i in idxs)
        sent = events = 0
        while sent + len(idxs) <= quota:
            writer.write(blob)
            await writer.drain()
            sent += len(idxs)
            events += blob_events
        rest = idxs[: quota - sent]
        if rest:
            writer.write("".join(self.lines[i] + "\r\n" for i in rest).encode())
            await writer.drain()
            sent += len(rest)
            events += sum(self.chat[i] for i in rest)
        return sent, events


def _serve(lines: list[str], chat: list[bool], total: int, channels: set[str], queue: Any) -> None:
    async def main() -> None:
        fake = _FakeServer(lines, chat, total, channels)
        server = await asyncio.start_server(fake.client, "127.0.0.1", 0, limit=1 << 20)
        queue.put(("port", server.sockets[0].getsockname()[1]))
        await fake.all_joined.wait()
        await asyncio.sleep(0.5)  # let the pool settle its bookkeeping
        queue.put(("done", await fake.blast()))
        await asyncio.sleep(3600)  # keep the connections open until we are terminated

    asyncio.run(main())


# -- the measurement -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _delivered(port: int) -> float | None:
    metrics = scrape(port)
    return metrics.value("chatlog_ingest_events_delivered_total") if metrics is not None else None


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _raw_rate(
    settings: IngestSettings, topic: str, records: list[tuple[bytes, str]], total: int, codec: str
) -> dict[str, Any]:
    """A bare producer sending ``total`` of ``records`` (cycled) with the ingester's settings."""
    stats: list[dict[str, Any]] = []
    conf = producer_config(settings.model_copy(update={"ingest_compression": codec}), "bench-raw")
    conf["statistics.interval.ms"] = 500
    conf["stats_cb"] = lambda s: stats.append(json.loads(s))
    producer = Producer(conf)
    n = len(records)
    start = time.perf_counter()
    for i in range(total):
        value, key = records[i % n]
        produce(producer, topic, value, key, wait_s=0.01)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    time.sleep(0.6)
    producer.poll(0)
    sent_bytes = max(
        (sum(b.get("txbytes", 0) for b in s.get("brokers", {}).values()) for s in stats), default=0
    )
    payload = sum(len(records[i % n][0]) for i in range(min(total, n))) * (total / min(total, n))
    return {
        "codec": codec,
        "events": total - left,
        "seconds": round(elapsed, 3),
        "events_per_s": round((total - left) / elapsed),
        "wire_bytes_per_event": round(sent_bytes / total, 1) if sent_bytes else None,
        "compression_ratio": round(payload / sent_bytes, 2) if sent_bytes else None,
    }


def run(
    *, lines: int, out: Path, profile: Path | None = None, repeat: int = 1, timeout: float = 300.0
) -> dict[str, Any]:
    extras.require_plotting()
    uid = uuid.uuid4().hex[:8]
    with scratch_topics(load(IngestSettings), f"bench.{uid}") as settings:
        raw_topic = f"bench.{uid}.raw"  # deleted with the others: same prefix
        ensure_topics(settings.model_copy(update={"topic_messages": raw_topic}))
        return _run(
            settings, raw_topic, lines=lines, out=out, profile=profile, timeout=timeout, repeat=repeat
        )


def _run(
    settings: IngestSettings,
    raw_topic: str,
    *,
    lines: int,
    out: Path,
    profile: Path | None,
    timeout: float,
    repeat: int,
) -> dict[str, Any]:
    load_before = round(os.getloadavg()[0], 2)
    text = corpus(CORPUS_LINES)
    events = [parse_line(line, received_at=1, ingester="bench") for line in text]
    chat = [e is not None for e in events]
    channels = {e.channel for e in events if e is not None}
    Registry(settings).add(channels)
    runs = [_ingest_once(settings, text, chat, channels, lines, profile, timeout) for _ in range(repeat)]
    ingest = max(runs, key=lambda r: r["events_per_s"])
    records = [(encode(e), e.channel) for e in events if e is not None]
    raw = [
        max(
            (_raw_rate(settings, raw_topic, records, ingest["events"], codec) for _ in range(_RAW_REPEAT)),
            key=lambda r: r["events_per_s"],
        )
        for codec in _CODECS
    ]
    same = next(r for r in raw if r["codec"] == settings.ingest_compression)
    result = {
        "benchmark": "ingest",
        "lines_sent": ingest["lines"],
        "events": ingest["events"],
        "ingest": ingest,
        "ingest_events_per_s_all_runs": [r["events_per_s"] for r in runs],
        "raw_producer": raw,
        "ingest_vs_raw": round(ingest["events_per_s"] / same["events_per_s"], 2),
        "goal": {"events_per_s": 100_000, "vs_raw": 0.5},
        "settings": {
            "compression": settings.ingest_compression,
            "linger_ms": settings.ingest_linger_ms,
            "batch_bytes": settings.ingest_batch_bytes,
            "messages_partitions": settings.messages_partitions,
            "corpus_lines": CORPUS_LINES,
            "profiled": profile is not None,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m_before_after": [load_before, round(os.getloadavg()[0], 2)],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(out, result)
    _plot(result, out.with_suffix(".png"))
    return result


def _ingest_once(
    settings: IngestSettings,
    text: list[str],
    chat: list[bool],
    channels: set[str],
    lines: int,
    profile: Path | None,
    timeout: float,
) -> dict[str, Any]:
    """One ingester process against one fake server: the measured run."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    server = ctx.Process(target=_serve, args=(text, chat, lines, channels, queue), daemon=True)
    server.start()
    metrics_port = _free_port()
    work = Path(tempfile.mkdtemp(prefix="bench_ingest_"))
    log_path = work / "ingester.log"
    env = {
        **os.environ,
        **settings.topic_env(),
        "CHATLOG_IRC_HOST": "127.0.0.1",
        "CHATLOG_IRC_FLAVOR": "ircv3",
        "CHATLOG_IRC_JOIN_RATE": "1000",
        "CHATLOG_METRICS_PORT": str(metrics_port),
        "CHATLOG_INGEST_GROUP_PREFIX": f"bench-{uuid.uuid4().hex[:8]}",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "0",
    }
    try:
        _, port = queue.get(timeout=30)
        env["CHATLOG_IRC_PORT"] = str(port)
        prefix = [sys.executable, "-m", "cProfile", "-o", str(profile)] if profile else [sys.executable]
        with log_path.open("wb") as log_file:
            proc = subprocess.Popen(
                [*prefix, "-m", "chatlog", "ingest", "--worker-id", "bench"],
                env=env, stdout=log_file, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            ingest = _measure(proc, queue, metrics_port, timeout, log_path)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        server.terminate()
        server.join(10)
    shutil.rmtree(work, ignore_errors=True)  # kept when the run failed: the error names the log
    return ingest


def _measure(
    proc: subprocess.Popen[bytes], queue: Any, port: int, timeout: float, log: Path
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    series: list[tuple[float, float]] = []
    blast: tuple[float, float, int, int] | None = None
    cpu_at_start: float | None = None
    while True:
        if proc.poll() is not None:
            raise ChatlogError(f"the ingester exited with {proc.returncode}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise ChatlogError(f"bench ingest timed out; ingester log: {log}")
        with contextlib.suppress(Exception):
            kind, value = queue.get_nowait()
            if kind == "done":
                blast = value
        delivered = _delivered(port)
        now = time.time()
        if delivered is not None:
            if cpu_at_start is None and delivered == 0:
                cpu_at_start = _cpu_s(proc.pid)
            series.append((now, delivered))
        if blast is not None and delivered is not None and delivered >= blast[3]:
            break
        time.sleep(0.1)
    start, blast_end, sent_lines, sent_events = blast
    elapsed = now - start
    cpu = _cpu_s(proc.pid) - (cpu_at_start or 0.0)
    return {
        "lines": sent_lines,
        "events": sent_events,
        "seconds": round(elapsed, 3),
        "events_per_s": round(sent_events / elapsed),
        "blast_seconds": round(blast_end - start, 3),
        "ingester_cpu_s": round(cpu, 2),
        "cpu_us_per_event": round(cpu / sent_events * 1e6, 2),
        "series": [(round(t - start, 2), int(v)) for t, v in series if t >= start - 1],
    }


def _plot(result: dict[str, Any], path: Path) -> None:
    with figure(path, 1, 2, figsize=(9, 3.2), dpi=80) as (_fig, (ax1, ax2)):
        series = result["ingest"]["series"]
        rates = [(t1, (v1 - v0) / (t1 - t0)) for (t0, v0), (t1, v1) in itertools.pairwise(series) if t1 > t0]
        ax1.plot([t for t, _ in rates], [r / 1000 for _, r in rates], lw=1)
        ax1.set_xlabel("s since the blast started")
        ax1.set_ylabel("k events acked / s")
        ax1.set_title("ingester", fontsize=10)
        labels = ["ingester", *(f"raw {r['codec']}" for r in result["raw_producer"])]
        values = [result["ingest"]["events_per_s"], *(r["events_per_s"] for r in result["raw_producer"])]
        ax2.bar(labels, [v / 1000 for v in values])
        ax2.axhline(100, color="red", lw=0.8, ls="--")
        ax2.set_ylabel("k events / s")
        ax2.set_title("same records", fontsize=10)


def summary(result: dict[str, Any]) -> str:
    ing = result["ingest"]
    raw = ", ".join(f"{r['codec']} {r['events_per_s']:,}/s" for r in result["raw_producer"])
    return (
        f"ingester: {ing['events_per_s']:,} events/s acked ({ing['events']:,} events in {ing['seconds']} s, "
        f"{ing['cpu_us_per_event']} us CPU/event); raw producer: {raw}; ratio {result['ingest_vs_raw']}"
    )
