"""Read-path benchmark: how many chat lines/s one pool connection turns from socket bytes into
``on_lines`` batches, next to the same input through the ``irc`` package's asyncio reactor.

A thread plays the IRC server: it registers the client, echoes its JOIN, then blasts a fixed corpus of
Twitch-like lines (``sendall`` of a big buffer, which runs without the GIL, so the event loop gets
nearly the whole core). ``chatlog bench irc`` runs it and writes ``results/bench_irc_read.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import time
from typing import Any

from core.settings import load
from ingest.irc.lines import LineSplitter, route_lines
from ingest.irc.pool import IrcPool
from ingest.irc.settings import PoolSettings

_CHANNEL = "benchchan"


def twitch_like_corpus(n: int = 2000, seed: int = 0) -> list[str]:
    """Lines shaped like Twitch's: tagged PRIVMSGs, some USERNOTICE/CLEARCHAT, a PING per 1000."""
    rng = random.Random(seed)
    words = ["Kappa", "PogChamp", "LUL", "hello", "gg", "wp", "KEKW", "monkaS", "🐸", "日本語", "ñandú"]
    out: list[str] = []
    for i in range(n):
        user = f"user{rng.randrange(100_000)}"
        text = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 16)))
        tags = (
            f"@badge-info=;badges=subscriber/12,premium/1;color=#1E90FF;display-name={user.title()};"
            f"emotes=;first-msg=0;flags=;id={rng.getrandbits(128):032x};mod=0;returning-chatter=0;"
            f"room-id=12345;subscriber=1;tmi-sent-ts={1_700_000_000_000 + i};turbo=0;"
            f"user-id={rng.randrange(10**8)};user-type="
        )
        if i % 1000 == 999:
            out.append("PING :tmi.twitch.tv")
        elif i % 97 == 0:
            out.append(f"{tags};msg-id=sub :tmi.twitch.tv USERNOTICE #{_CHANNEL} :{text}")
        elif i % 211 == 0:
            out.append(
                f"@room-id=12345;tmi-sent-ts={1_700_000_000_000 + i} :tmi.twitch.tv CLEARCHAT #{_CHANNEL}"
            )
        else:
            out.append(f"{tags} :{user}!{user}@{user}.tmi.twitch.tv PRIVMSG #{_CHANNEL} :{text}")
    return out


class _Blaster(threading.Thread):
    """A one-client IRC server: 001 after USER, echo of JOIN, then ``total`` corpus lines."""

    def __init__(self, corpus: list[str], total: int) -> None:
        super().__init__(daemon=True, name="irc-bench-blaster")
        self._blob = ("\r\n".join(corpus) + "\r\n").encode()
        self._per_blob = len(corpus)
        self.total = total - total % self._per_blob or self._per_blob
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(30)
        self.port: int = self._sock.getsockname()[1]
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn, _ = self._sock.accept()
            with conn:
                conn.settimeout(30)
                buf = b""
                nick = b""
                while not nick or b"JOIN" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                    if not nick and b"USER" in buf:
                        nick = buf.split(b"NICK ", 1)[1].split(b"\r\n", 1)[0]
                        conn.sendall(b":bench 001 " + nick + b" :welcome\r\n")
                conn.sendall(b":" + nick + b"!b@bench JOIN #" + _CHANNEL.encode() + b"\r\n")
                for _ in range(self.total // self._per_blob):
                    conn.sendall(self._blob)
                with contextlib.suppress(OSError):
                    while (chunk := conn.recv(65536)) and b"QUIT" not in chunk:
                        pass  # until the client quits or closes
        except BaseException as exc:
            self.error = exc
        finally:
            self._sock.close()


async def _pool_read(corpus: list[str], total: int) -> dict[str, Any]:
    blaster = _Blaster(corpus, total)
    blaster.start()
    settings = load(
        PoolSettings, irc_host="127.0.0.1", irc_port=blaster.port, irc_flavor="ircv3", irc_tls=False
    )
    done = asyncio.Event()
    seen = {"lines": 0, "batches": 0}
    first: list[float] = []

    def on_lines(lines: list[str], received_at_ms: int) -> None:
        if not first:
            first.append(time.perf_counter())
        seen["lines"] += len(lines)
        seen["batches"] += 1
        if seen["lines"] >= expected:
            done.set()

    pings = sum(1 for line in corpus if line.startswith("PING"))
    expected = blaster.total // len(corpus) * (len(corpus) - pings)
    pool = IrcPool(settings, on_lines, worker_id="bench")
    runner = asyncio.create_task(pool.run())
    pool.set_wanted({_CHANNEL})
    cpu0 = time.process_time()
    try:
        await asyncio.wait_for(done.wait(), 300)
    finally:
        elapsed = time.perf_counter() - first[0] if first else float("nan")
        cpu = time.process_time() - cpu0
        await pool.close(part=False)
        await runner
        blaster.join(10)
    return {
        "lines": seen["lines"],
        "seconds": round(elapsed, 3),
        "lines_per_s": round(seen["lines"] / elapsed),
        "mb_per_s": round(pool.stats().bytes_read / elapsed / 1e6, 1),
        "lines_per_batch": round(seen["lines"] / max(1, seen["batches"]), 1),
        "process_cpu_s": round(cpu, 3),  # client and server thread together
        "lines_per_cpu_s": round(seen["lines"] / cpu) if cpu > 0 else None,
    }


async def _irc_package_read(corpus: list[str], total: int) -> dict[str, Any]:
    """The same input through ``irc.client_aio`` (its reactor parses every line into an Event)."""
    import irc.client
    import irc.client_aio

    blaster = _Blaster(corpus, total)
    blaster.start()
    done = asyncio.Event()
    count = [0]
    first: list[float] = []
    expected = blaster.total // len(corpus) * len(corpus)

    def on_raw(_conn: Any, _event: Any) -> None:
        if not first:
            first.append(time.perf_counter())
        count[0] += 1
        if count[0] >= expected:
            done.set()

    cpu0 = time.process_time()
    reactor = irc.client_aio.AioReactor(loop=asyncio.get_running_loop())
    reactor.add_global_handler("all_raw_messages", on_raw)
    conn = reactor.server()
    await conn.connect("127.0.0.1", blaster.port, "benchnick")
    conn.join(f"#{_CHANNEL}")
    try:
        await asyncio.wait_for(done.wait(), 600)
    finally:
        elapsed = time.perf_counter() - first[0] if first else float("nan")
        cpu = time.process_time() - cpu0
        conn.disconnect()
        blaster.join(10)
    return {
        "lines": count[0],
        "seconds": round(elapsed, 3),
        "lines_per_s": round(count[0] / elapsed),
        "process_cpu_s": round(cpu, 3),
        "lines_per_cpu_s": round(count[0] / cpu) if cpu > 0 else None,
    }


def _consume(_line: str) -> bool:
    return True


def _reader_only(corpus: list[str], chunk_bytes: int, rounds: int) -> dict[str, Any]:
    """The split + decode + classify step alone, on ``chunk_bytes`` chunks, no sockets."""
    blob = ("\r\n".join(corpus) + "\r\n").encode()
    chunks = [blob[i : i + chunk_bytes] for i in range(0, len(blob), chunk_bytes)]
    splitter = LineSplitter()
    n = 0
    best = float("inf")
    for _ in range(rounds):  # best of several: the machine is shared
        start = time.perf_counter()
        for chunk in chunks:
            n = len(route_lines(splitter.feed(chunk), _consume))
        best = min(best, time.perf_counter() - start)
    del n
    return {"chunk_bytes": chunk_bytes, "lines_per_s": round(len(corpus) / best)}


def run_read_bench(
    lines: int = 500_000, *, compare_irc_package: bool = True, irc_package_lines: int = 100_000
) -> dict[str, Any]:
    """Lines/s of the pool's read path (socket → on_lines) and, for comparison, of irc.client_aio."""
    corpus = twitch_like_corpus()
    result: dict[str, Any] = {
        "corpus_lines": len(corpus),
        "bytes_per_line": round(sum(len(x.encode()) + 2 for x in corpus) / len(corpus), 1),
        "pool": asyncio.run(_pool_read(corpus, lines)),
        "reader_only": _reader_only(corpus, 65536, 20),
    }
    if compare_irc_package:
        result["irc_package"] = asyncio.run(_irc_package_read(corpus, irc_package_lines))
        pool, other = result["pool"], result["irc_package"]
        result["pool_vs_irc_package"] = round(pool["lines_per_s"] / other["lines_per_s"], 1)
        if pool["lines_per_cpu_s"] and other["lines_per_cpu_s"]:  # steadier on a shared machine
            result["pool_vs_irc_package_per_cpu_s"] = round(
                pool["lines_per_cpu_s"] / other["lines_per_cpu_s"], 1
            )
    return result


if __name__ == "__main__":  # pragma: no cover - manual run: python -m lab.bench.irc_read
    import json

    print(json.dumps(run_read_bench(), indent=2))
