"""The data and the scratch topics and keyspaces of ``chatlog bench sink`` (see :mod:`lab.bench.sink`)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.bench.loading import produce as produce_record
from lab.bench.scratch import scratch_keyspaces, scratch_topics
from schemas.chat_event import ChatEvent
from sink.settings import SinkSettings


def synthetic_events(
    n: int, seed: int = 7, *, channels: int = 500, now_ms: int | None = None
) -> list[ChatEvent]:
    """``n`` PRIVMSGs shaped like Twitch chat: Zipf-ish channels, a user pool each, ~12 tags."""
    rng = random.Random(seed)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    weights = [1 / (i + 1) for i in range(channels)]
    chosen = rng.choices(range(channels), weights=weights, k=n)
    words = [
        "kappa",
        "pog",
        "lul",
        "gg",
        "wp",
        "hello",
        "chat",
        "stream",
        "nice",
        "clip",
        "when",
        "what",
        "omegalul",
        "monka",
        "ez",
    ]
    out = []
    for i, c in enumerate(chosen):
        channel = f"chan{c:04d}"
        user = f"user{rng.randrange(5000 if c < 10 else 300):05d}"
        text = " ".join(rng.choices(words, k=rng.randint(2, 25)))
        sent = now - (n - i) * 2
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        tags = {
            "badge-info": "subscriber/12",
            "badges": "subscriber/12,premium/1",
            "color": "#1E90FF",
            "display-name": user.capitalize(),
            "emotes": "",
            "first-msg": "0",
            "id": mid,
            "mod": "0",
            "room-id": str(1000 + c),
            "subscriber": "1",
            "tmi-sent-ts": str(sent),
            "turbo": "0",
            "user-id": str(50000 + int(user[4:])),  # one id per login, as on Twitch
            "user-type": "",
        }
        tag_text = ";".join(f"{k}={v}" for k, v in tags.items())
        raw = f"@{tag_text} :{user}!{user}@{user}.tmi.twitch.tv PRIVMSG #{channel} :{text}"
        out.append(
            ChatEvent(
                message_id=mid,
                kind="PRIVMSG",
                channel=channel,
                channel_id=tags["room-id"],
                user_login=user,
                user_id=tags["user-id"],
                display_name=tags["display-name"],
                text=text,
                sent_at=sent,
                received_at=sent + 40,
                tags=tags,
                raw=raw,
                ingester="bench-1",
            )
        )
    return out


def produce(settings: SinkSettings, values: list[tuple[bytes, bytes]]) -> float:
    from confluent_kafka import Producer

    producer = Producer({**settings.kafka_client_config(), "linger.ms": 20, "compression.type": "lz4"})
    start = time.perf_counter()
    for key, value in values:
        produce_record(producer, settings.topic_messages, value, key)
        producer.poll(0)
    producer.flush(60)
    return time.perf_counter() - start


@contextmanager
def fresh(settings: SinkSettings, tag: str, work: Path) -> Iterator[SinkSettings]:
    """``settings`` on scratch topics and a scratch keyspace (``bench<tag>``), removed on the way out."""
    with (
        scratch_topics(
            settings,
            f"bench{tag}",
            channel_buckets=4,
            cassandra_keyspace=f"bench{tag}",
            sink_checkpoint=str(work / tag / "checkpoint"),
            sink_metrics_port=0,
            cassandra_ttl_s=0,
        ) as scratch,
        scratch_keyspaces(scratch, scratch.cassandra_keyspace),
    ):
        yield scratch
