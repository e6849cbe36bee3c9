"""What reached the messages topic: the tokens (first word of each PRIVMSG's text) the simulator sent."""

from __future__ import annotations

import asyncio
import time

from confluent_kafka import Consumer

from core.settings import StackSettings
from lab.simulator import ChatSimulator
from schemas import chat_event


def tokens_in_topic(settings: StackSettings, wanted: set[str], timeout: float) -> set[str]:
    """Tokens (first word of the text) found in the messages topic, reading until all are found."""
    consumer = Consumer(
        {
            **settings.kafka_client_config(),
            "group.id": f"verify-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([settings.topic_messages])
    found: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        while not wanted <= found and time.monotonic() < deadline:
            for msg in consumer.consume(5000, 0.5):
                if msg.error() is None:
                    event = chat_event.decode(msg.value() or b"")
                    if event.kind == "PRIVMSG" and event.text:
                        found.add(event.text.split(" ", 1)[0])
    finally:
        consumer.close()
    return found


async def assert_sent_reached_kafka(
    settings: StackSettings, sim: ChatSimulator, traffic: asyncio.Task[None], at_least: int
) -> None:
    """Stop ``sim`` and its ``traffic``; every token it sent (more than ``at_least``) is in the topic."""
    sim.stop()
    await traffic
    sent = {m.token for m in sim.sent}
    assert len(sent) > at_least
    found = tokens_in_topic(settings, sent, timeout=60)
    assert sent <= found, f"{len(sent - found)} of {len(sent)} messages never reached Kafka"
