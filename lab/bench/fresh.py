"""``chatlog bench fresh``: IRC -> visible in ``/api/v2/recent-messages/<channel>``, with the sink stopped and
running (issue 34's goal: p99 <= 1 s either way).

On the local stack, in a fresh namespace: one real ``chatlog ingest`` logs a channel of the IRC server;
a real ``chatlog serve`` answers recent messages; an IRC client (the
``irc`` package) says a line with a unique token, and the recent messages are asked every
``poll_ms`` until the line is there. Phase "sink stopped": the sink's written offsets are where a
caught-up sink that stopped leaves them (the topic's end when the phase starts), so every line is read
from Kafka. Phase "sink running": a real ``chatlog sink`` runs, so lines come from Cassandra once written
and from Kafka until then. Each sample is the time from the PRIVMSG to the first answer holding it.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from core.settings import StackSettings
from lab.demo.supervisor import Supervisor
from lab.results import write_json

CHANNEL_PREFIX = "fresh"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Sayer:
    """One IRC connection (the ``irc`` package) that joins ``channel`` and says lines in it."""

    def __init__(self, port: int, channel: str) -> None:
        import irc.client

        self.reactor = irc.client.Reactor()
        self.channel = f"#{channel}"
        self.conn = self.reactor.server().connect("127.0.0.1", port, f"say{secrets.token_hex(3)}")
        joined = threading.Event()
        self.conn.add_global_handler("welcome", lambda c, _e: c.join(self.channel))  # once registered
        self.conn.add_global_handler("join", lambda _c, _e: joined.set())
        deadline = time.monotonic() + 15
        while not joined.is_set():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the IRC server did not confirm the JOIN of {self.channel}")
            self.reactor.process_once(0.05)

    def say(self, text: str) -> float:
        """PRIVMSG ``text``; the monotonic time it was handed to the socket."""
        self.conn.privmsg(self.channel, text)
        sent = time.monotonic()
        self.reactor.process_once(0)
        return sent

    def close(self) -> None:
        self.conn.disconnect("done")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_healthy(base: str, log: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"chatlog serve did not answer in {timeout_s:.0f} s; see {log}")


def _visible(base: str, channel: str, token: str) -> bool:
    url = f"{base}/api/v2/recent-messages/{channel}?limit=20"
    with urllib.request.urlopen(url, timeout=10) as response:
        return token in response.read().decode()


def _sample(sayer: Sayer, base: str, channel: str, poll_s: float, timeout_s: float) -> float | None:
    token = secrets.token_hex(6)
    sent = sayer.say(f"fresh {token}")
    deadline = sent + timeout_s
    while time.monotonic() < deadline:
        if _visible(base, channel, token):
            return time.monotonic() - sent
        time.sleep(poll_s)
    return None


def _phase(sayer: Sayer, base: str, channel: str, samples: int, poll_s: float) -> dict[str, Any]:
    seen: list[float] = []
    missed = 0
    for _ in range(samples):
        latency = _sample(sayer, base, channel, poll_s, 10.0)
        if latency is None:
            missed += 1
        else:
            seen.append(latency)
        time.sleep(0.2)
    out: dict[str, Any] = {"samples": len(seen), "missed_10s": missed}
    if seen:
        out.update({f"p{int(q * 100)}_ms": round(1000 * _quantile(seen, q), 1) for q in (0.5, 0.99)})
        out["max_ms"] = round(1000 * max(seen), 1)
    return out


def _commit_end(settings: StackSettings) -> None:
    """The written offsets a caught-up sink that stopped leaves: the topic's end, every partition."""
    from confluent_kafka import Consumer, TopicPartition

    from schemas.topics import sink_written_group

    consumer = Consumer(
        {**settings.kafka_client_config(), "group.id": sink_written_group(settings.cassandra_keyspace)}
    )
    try:
        topic = settings.topic_messages
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = [
            TopicPartition(topic, p, consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1])
            for p in parts
        ]
        consumer.commit(offsets=ends, asynchronous=False)
    finally:
        consumer.close()


def run(*, samples: int = 50, poll_ms: int = 20, out: Path) -> dict[str, Any]:
    from core.kafka_admin import ensure_topics
    from ingest.registry import Registry
    from store.schema import apply_schema

    run_id = secrets.token_hex(3)
    base_settings = StackSettings()
    settings = base_settings.with_topics(
        f"bench-fresh.{run_id}", cassandra_keyspace=f"bench_fresh_{run_id}", messages_partitions=4
    )
    work = settings.state_dir / "runs" / f"bench-fresh-{run_id}"
    work.mkdir(parents=True, exist_ok=True)
    ensure_topics(settings)
    apply_schema(settings)
    channel = f"{CHANNEL_PREFIX}{run_id}"
    Registry(settings).add([channel])
    _commit_end(settings)
    env = {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        **settings.topic_env(),
        "CHATLOG_CASSANDRA_KEYSPACE": settings.cassandra_keyspace,
        "CHATLOG_INGEST_GROUP_PREFIX": f"bench-fresh-{run_id}",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1",
        "CHATLOG_IRC_HOST": "127.0.0.1",
        "CHATLOG_IRC_PORT": str(settings.irc_port),
        "CHATLOG_IRC_FLAVOR": "ircv3",
        "CHATLOG_METRICS_PORT": "0",
        "CHATLOG_SINK_CHECKPOINT": str(work / "checkpoint"),
        "CHATLOG_SINK_METRICS_PORT": "0",
        "CHATLOG_SPARK_MASTER": "local[2]",
    }
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    result: dict[str, Any] = {"channel": channel, "poll_ms": poll_ms}
    with Supervisor(work, env=env) as sup:
        sup.start("ingest", ["ingest", "--replica", "0", "--worker-id", "bf"])
        sup.start("serve", ["serve", "--port", str(port)])
        _wait_healthy(base, work / "serve.log")
        sayer = Sayer(settings.irc_port, channel)
        try:
            deadline = time.monotonic() + 120  # until the ingester has joined: a line said comes through
            while _sample(sayer, base, channel, 0.1, 2.0) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no line of #{channel} came through in 120 s; see {work}/ingest.log")
            result["sink_stopped"] = _phase(sayer, base, channel, samples, poll_ms / 1000)
            sup.start("sink", ["sink"])
            deadline = time.monotonic() + 300
            while "sink started" not in (work / "sink.log").read_text(errors="replace"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the sink did not start in 300 s; see {work}/sink.log")
                time.sleep(1)
            time.sleep(10)  # its first batches (start-up) behind it
            result["sink_running"] = _phase(sayer, base, channel, samples, poll_ms / 1000)
        finally:
            sayer.close()
    result["note"] = (
        "PRIVMSG handed to the IRC server's socket -> first /api/v2/recent-messages answer holding the line, "
        f"polled every {poll_ms} ms (each value errs late by up to one poll); one real chatlog ingest, "
        "a real chatlog serve; sink stopped: written offsets at the topic's end; sink "
        "running: a real chatlog sink (local[2])"
    )
    write_json(out, result)
    return result


def summary(result: dict[str, Any]) -> list[str]:
    lines = []
    for phase in ("sink_stopped", "sink_running"):
        r = result.get(phase) or {}
        lines.append(
            f"{phase.replace('_', ' ')}: IRC -> recent-messages p50 {r.get('p50_ms')} ms, "
            f"p99 {r.get('p99_ms')} ms, max {r.get('max_ms')} ms ({r.get('samples')} samples, "
            f"{r.get('missed_10s')} not seen in 10 s)"
        )
    return lines
