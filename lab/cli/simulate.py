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

from core.settings import IrcSettings, load
from lab.simulator import ChatSimulator


async def _run(
    sim: ChatSimulator,
    duration: float,
    out: Path | None,
    burst: tuple[float, float, float],
    schedule: list[tuple[float, float]] | None = None,
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
            new = sim.take()
            if fh is not None:
                fh.write("".join(new))
                fh.flush()
            written += len(new)
            print(
                json.dumps({"event": "progress", "t": time.time(), "sent": written, "failed": sim.failed}),
                flush=True,
            )

    reporter = asyncio.create_task(report())
    at, factor, length = burst
    try:
        if schedule:
            for step_rate, seconds in schedule:
                print(json.dumps({"event": "step", "t": time.time(), "rate": step_rate}), flush=True)
                await sim.run(seconds, rate=step_rate)
        elif factor > 1 and 0 <= at < duration:
            await sim.run(at)
            await sim.run(min(length, duration - at), rate=sim.rate * factor)
            await sim.run(max(0.0, duration - at - length))
        else:
            await sim.run(duration)
    finally:
        reporter.cancel()
        new = sim.take()
        written += len(new)
        if fh is not None:
            fh.write("".join(new))
            fh.close()
        await sim.close()
        print(
            json.dumps({"event": "done", "t": time.time(), "sent": written, "failed": sim.failed}),
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
        schedule: Annotated[
            str | None,
            typer.Option(
                help="Steps of rate instead of one: RATE:SECONDS,RATE:SECONDS,... (e.g. 1000:120,2000:120); "
                "--rate and --duration are then unused.",
            ),
        ] = None,
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
        steps = parse_schedule(schedule) if schedule is not None else None
        irc = load(IrcSettings)
        sim = ChatSimulator(
            irc.irc_host, irc.irc_port, names, rate=rate, connections=connections, zipf_s=zipf, seed=seed
        )
        sim.keep = False  # what was sent goes to --out each second, not into memory
        try:
            asyncio.run(_run(sim, duration, out, (burst_at, burst_factor, burst_seconds), steps))
        except (OSError, TimeoutError) as exc:  # the IRC server is not there, or never welcomed us
            where = f"{irc.irc_host}:{irc.irc_port}"
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            _fail(f"IRC server at {where} (CHATLOG_IRC_HOST, CHATLOG_IRC_PORT): {reason}")


_CHANNEL = re.compile(r"[^\s,#\x00-\x1f\x7f]{1,200}")


def parse_schedule(text: str) -> list[tuple[float, float]]:
    """``RATE:SECONDS,...`` as (rate, seconds) steps; exits with one line naming the bad step."""
    steps = []
    for part in text.split(","):
        rate_text, _, seconds_text = part.strip().partition(":")
        try:
            rate, seconds = float(rate_text), float(seconds_text)
        except ValueError:
            _fail(f"--schedule: {part.strip()!r} is not RATE:SECONDS (e.g. 1000:120)")
        if not (math.isfinite(rate) and rate > 0 and math.isfinite(seconds) and seconds > 0):
            _fail(f"--schedule: {part.strip()!r} needs a rate and seconds above 0")
        steps.append((rate, seconds))
    return steps


def _fail(message: str) -> NoReturn:
    print(f"chatlog: error: {message}", file=sys.stderr)
    raise typer.Exit(2)
