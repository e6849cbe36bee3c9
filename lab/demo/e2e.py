"""End-to-end latency as a reader sees it: when a sent message becomes visible over the HTTP API.

A reader thread asks ``chatlog serve`` for the recent messages of a few sample channels
(``GET /api/v2/recent-messages/<channel>?after=<ms>``, what a chat client asks on join) and notes, for each
simulator token (the first word of a message's text), the time of the first answer that held it. Joined
afterwards with the simulator's send times (same clock, same host), that is IRC send -> visible over HTTP,
for every message sent to the sample channels, whatever the sink's progress (reads merge what Kafka holds
beyond the sink's written offsets). The time noted is when the answering request returned, so a value errs
late by up to one poll interval plus one request, never early. Polls run every ``interval_s`` while lines
keep up, and every 1/20 of the oldest missing line's age (at most 2 s) while they lag.

Which lines a poll asks for: those sent after the oldest send time still missing in that channel, or, when
nothing is missing, after the newest send time the simulator has recorded (its ``--out`` file, flushed each
second: anything not in it yet was sent later), minus a margin. So a line is looked for until it is found,
however late it comes (up to 3 minutes: then it is given up, as a lost message would be); the report counts
sampled messages that are stored and were never seen.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from core.irc_parse import MalformedLine, parse_line
from core.logins import login_of
from core.times import now_ms
from lab.demo.verify import token_of
from lab.simulator import SentMessage, hotness_order

log = logging.getLogger(__name__)

SAMPLE_RANKS = (10, 40, 160)
"""Which channels the probe reads, by the simulator's hotness rank: not the few hottest (their
partitions would make each poll large), then further down the long tail: three polls every half second."""
POLL_S: Final = 0.5
"""How often the probe asks each sample channel for its recent messages while nothing is late."""


def sample_channels(channels: Sequence[str], seed: int, ranks: Sequence[int] = SAMPLE_RANKS) -> list[str]:
    """The channels at ``ranks`` of the hotness order of a simulator seeded with ``seed`` (all channels,
    if there are too few for any rank)."""
    order = hotness_order([login_of(c) for c in channels], random.Random(seed))
    picked = [order[r] for r in ranks if r < len(order)]
    return picked or order


class Watch:
    """What the probe still waits for, per sample channel (pure: the thread feeds it)."""

    def __init__(
        self, channels: Iterable[str], start_ms: int, margin_ms: int = 1000, give_up_ms: int = 180_000
    ) -> None:
        self.pending: dict[str, dict[str, int]] = {c: {} for c in channels}
        self.seen: dict[str, int] = {}  # token -> epoch ms of the poll that first read its row
        self.horizon_ms = start_ms  # newest send time the simulator has recorded (or the start)
        self.margin_ms, self.give_up_ms = margin_ms, give_up_ms
        self.given_up = 0

    def expire(self, now_ms: int) -> None:
        """Stop looking for rows sent more than ``give_up_ms`` ago (a lost message would otherwise hold
        its channel's polls at its send time for good)."""
        for waiting in self.pending.values():
            old = [t for t, ts in waiting.items() if now_ms - ts > self.give_up_ms]
            for t in old:
                del waiting[t]
            self.given_up += len(old)

    def sent(self, messages: Iterable[SentMessage]) -> None:
        """Messages the simulator recorded: those of sample channels not read yet become pending."""
        for m in messages:
            self.horizon_ms = max(self.horizon_ms, m.sent_at_ms)
            waiting = self.pending.get(m.channel)
            if waiting is not None and m.token not in self.seen:
                waiting[m.token] = m.sent_at_ms

    def saw(self, channel: str, token: str, at_ms: int) -> None:
        if token not in self.seen:
            self.seen[token] = at_ms
        waiting = self.pending.get(channel)
        if waiting is not None:
            waiting.pop(token, None)

    def since_ms(self, channel: str) -> int:
        """Rows of ``channel`` to ask for: ``sent_at`` at or after this (epoch ms)."""
        oldest = min(self.pending[channel].values(), default=self.horizon_ms)
        return min(oldest, self.horizon_ms) - self.margin_ms

    def lag_ms(self, now_ms: int) -> int:
        """Age of the oldest missing row (0 when nothing is missing)."""
        oldest = min((min(w.values()) for w in self.pending.values() if w), default=now_ms)
        return max(0, now_ms - oldest)


def poll_interval_s(lag_ms: int, base_s: float, max_s: float = 2.0) -> float:
    """``base_s`` while rows keep up; 1/20 of the lag while they do not, at most ``max_s``."""
    return min(max_s, max(base_s, lag_ms / 20_000))


class SentTail:
    """The new complete lines of the simulator's ``--out`` file, each time it is asked."""

    def __init__(self, path: Path) -> None:
        self.path, self._offset = path, 0

    def read(self) -> list[SentMessage]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self._offset += end
        return [SentMessage.from_json(line) for line in data[:end].splitlines() if line.strip()]


@dataclass
class ProbeStats:
    polls: int = 0
    poll_s_total: float = 0.0
    poll_s_max: float = 0.0
    rows_read: int = 0
    errors: int = 0
    given_up: int = 0
    seen: dict[str, int] = field(default_factory=dict)  # token -> epoch ms of the poll that first saw it


def tokens_of(body: bytes) -> list[str]:
    """The simulator tokens of a recent-messages answer (its raw IRC lines' texts)."""
    import json

    out = []
    for raw in json.loads(body).get("messages") or ():
        try:
            event = parse_line(raw, received_at=0)
        except MalformedLine:
            continue
        token = token_of(event.text) if event is not None else None
        if token:
            out.append(token)
    return out


class ReadProbe:
    """A thread that polls the sample channels over HTTP until ``stop()``."""

    def __init__(
        self,
        base_url: str,
        channels: Sequence[str],
        sent_file: Path,
        *,
        interval_s: float = POLL_S,
    ) -> None:
        self.base_url, self.channels, self.sent_file = base_url.rstrip("/"), list(channels), sent_file
        self.interval_s = interval_s
        self.stats = ProbeStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    def start(self, timeout: float = 60.0) -> None:
        self._thread = threading.Thread(target=self._run, name="e2e-probe", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)
        if self._failure is not None:
            raise self._failure

    def stop(self) -> ProbeStats:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        return self.stats

    def _run(self) -> None:
        import httpx

        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
        try:
            client = httpx.Client(base_url=self.base_url, timeout=10.0)
            client.get("/health").raise_for_status()
        except BaseException as exc:  # handed to start()'s caller
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        stats, tail = self.stats, SentTail(self.sent_file)
        watch = Watch(self.channels, now_ms())
        stats.seen = watch.seen
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                watch.sent(tail.read())
                watch.expire(now_ms())
                for channel in self.channels:
                    since = watch.since_ms(channel)
                    try:
                        answer = client.get(f"/api/v2/recent-messages/{channel}", params={"after": since - 1})
                        answer.raise_for_status()
                    except httpx.HTTPError:
                        stats.errors += 1
                        continue
                    seen_ms = now_ms()
                    for token in tokens_of(answer.content):
                        stats.rows_read += 1
                        watch.saw(channel, token, seen_ms)
                took = time.monotonic() - began
                stats.polls += 1
                stats.poll_s_total += took
                stats.poll_s_max = max(stats.poll_s_max, took)
                stats.given_up = watch.given_up
                wait = poll_interval_s(watch.lag_ms(now_ms()), self.interval_s)
                self._stop.wait(max(0.0, wait - took))
        except Exception:  # the run goes on without the rest of the sample; the report shows the count
            log.exception("e2e probe stopped")
            stats.errors += 1
        finally:
            client.close()
