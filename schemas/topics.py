"""Topic specs from ``topics.toml`` (the one place they are defined), with settings applied."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

ROLES = ("channels", "messages", "deadletter", "status", "coverage", "optout")


class TopicSettings(Protocol):
    """What the topic specs take from the settings (``core.settings.KafkaSettings`` has it), besides a
    ``topic_<role>`` name for every role."""

    @property
    def channel_buckets(self) -> int: ...
    @property
    def messages_partitions(self) -> int: ...
    @property
    def messages_retention_ms(self) -> int: ...


def sink_written_group(keyspace: str) -> str:
    """The Kafka consumer group under which the streaming sink writing into ``keyspace`` commits, for each
    partition of the messages topic, the offset below which every record is in Cassandra (or was a copy,
    a dead letter, an opt-out). Nobody consumes in this group: readers ask its committed offsets and read
    the topic from there to its end for what the sink has not written yet (serve's fresh reads)."""
    return f"chatlog-sink-written.{keyspace}"


@dataclass(frozen=True)
class TopicSpec:
    role: str
    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads(resources.files("schemas").joinpath("topics.toml").read_text())
    return data


def topic_specs(settings: TopicSettings | None = None) -> list[TopicSpec]:
    """Every topic with its final name, partition count and configs."""
    raw = _raw()
    specs = []
    for role in ROLES:
        entry = raw[role]
        name = str(entry["default_name"])
        partitions = int(entry["partitions"])
        config = {str(k): str(v) for k, v in entry.get("config", {}).items()}
        if settings is not None:
            name = str(getattr(settings, f"topic_{role}", name))
            if role == "channels":
                partitions = settings.channel_buckets
            elif role == "messages":
                partitions = settings.messages_partitions
                config["retention.ms"] = str(settings.messages_retention_ms)
        specs.append(TopicSpec(role, name, partitions, config))
    return specs
