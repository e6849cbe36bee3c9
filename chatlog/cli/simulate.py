"""``chatlog simulate``: run the chatter simulator as its own process, logging what it sent."""

from __future__ import annotations

import asyncio
import json
import math
import re
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from chatlog.simulator import ChatSimulator
from core.settings import IrcSettings, load


async def _run(
    sim: ChatSimulator, duration: float, out: Path | None, burst: tuple[float, float, float]
) -> None:
    loop = asyncio.get_running_loop()
    starting = asyncio.create_task(sim.start())

    def on_signal() -> None:  # while connecting too: a stop never waits for start()'s 60 s
        sim.stop()
        starting.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    try:
        await starting
    except asyncio.CancelledError:
        await sim.close()
        print(json.dumps({"event": "done", "t": time.time(), "sent": 0, "failed": 0}), flush=True)
        return
    print(json.dumps({"event": "ready", "t": time.time()}), flush=True)
    written = 0
    fh = out.open("a") if out else None

    async def report() -> None:
        nonlocal written
        while True:
            await asyncio.sleep(1.0)
            new = sim.sent[written:]
            if fh is not None:
                fh.write("".join(m.to_json() + "\n" for m in new))
                fh.flush()
            written += len(new)
            print(
                json.dumps({"event": "progress", "t": time.time(), "sent": written, "failed": sim.failed}),
                flush=True,
            )

    reporter = asyncio.create_task(report())
    at, factor, length = burst
    try:
        if factor > 1 and 0 <= at < duration:
            await sim.run(at)
            await sim.run(min(length, duration - at), rate=sim.rate * factor)
            await sim.run(max(0.0, duration - at - length))
        else:
            await sim.run(duration)
    finally:
        reporter.cancel()
        new = sim.sent[written:]
        if fh is not None:
            fh.write("".join(m.to_json() + "\n" for m in new))
            fh.close()
        await sim.close()
        print(
            json.dumps({"event": "done", "t": time.time(), "sent": len(sim.sent), "failed": sim.failed}),
            flush=True,
        )


def register(app: typer.Typer) -> None:
    @app.command()
    def simulate(
        channels: Annotated[list[str] | None, typer.Argument(help="Channel logins.")] = None,
        channels_file: Annotated[Path | None, typer.Option("--file", help="One channel per line.")] = None,
        rate: Annotated[float, typer.Option(help="Messages per second in total.")] = 2000.0,
        duration: Annotated[float, typer.Option(help="Seconds to send.")] = 60.0,
        connections: Annotated[int, typer.Option(help="Client connections.")] = 16,
        zipf: Annotated[float, typer.Option(help="Zipf exponent of the channel skew.")] = 1.1,
        seed: Annotated[int, typer.Option()] = 0,
        out: Annotated[Path | None, typer.Option(help="Append what was sent here as ndjson.")] = None,
        burst_at: Annotated[float, typer.Option(help="Start a burst after this many seconds.")] = -1.0,
        burst_factor: Annotated[float, typer.Option(help="Rate multiplier during the burst.")] = 1.0,
        burst_seconds: Annotated[float, typer.Option(help="Length of the burst.")] = 5.0,
    ) -> None:
        """Simulated chatters sending real PRIVMSGs into the IRC server (progress as JSON lines)."""
        names = list(channels or [])
        if channels_file is not None:
            try:
                names += [ln.strip() for ln in channels_file.read_text().splitlines() if ln.strip()]
            except (OSError, UnicodeDecodeError) as exc:
                _fail(f"cannot read --file {channels_file}: {getattr(exc, 'strerror', None) or exc}")
        if not names:
            _fail("simulate needs channels (arguments or --file)")
        for name in names:
            if not _CHANNEL.fullmatch(name.removeprefix("#")):
                _fail(
                    f"{name[:80]!r} is not a channel name (one word: no spaces, commas or control characters)"
                )
        names = [name.removeprefix("#") for name in names]
        if not (math.isfinite(rate) and rate > 0):
            _fail(f"--rate must be a number > 0, not {rate}")
        if not (math.isfinite(duration) and duration >= 0):
            _fail(f"--duration must be a number >= 0, not {duration}")
        if connections < 1:
            _fail(f"--connections must be at least 1, not {connections}")
        if out is not None:
            try:
                out.open("a").close()
            except OSError as exc:
                _fail(f"cannot append to --out {out}: {exc.strerror or exc}")
        irc = load(IrcSettings)
        sim = ChatSimulator(
            irc.irc_host, irc.irc_port, names, rate=rate, connections=connections, zipf_s=zipf, seed=seed
        )
        try:
            asyncio.run(_run(sim, duration, out, (burst_at, burst_factor, burst_seconds)))
        except (OSError, TimeoutError) as exc:  # the IRC server is not there, or never welcomed us
            where = f"{irc.irc_host}:{irc.irc_port}"
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            _fail(f"IRC server at {where} (CHATLOG_IRC_HOST, CHATLOG_IRC_PORT): {reason}")


_CHANNEL = re.compile(r"[^\s,#\x00-\x1f\x7f]{1,200}")


def _fail(message: str) -> NoReturn:
    print(f"chatlog: error: {message}", file=sys.stderr)
    raise typer.Exit(2)
