"""Kafka administration: creating the topics of ``schemas/topics.toml``, ready to use when it returns."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from core.errors import ChatlogError
from core.kafka_probe import probe, quiet_admin
from core.settings import KafkaSettings
from schemas.topics import topic_specs

_READY_POLL_S: Final = 0.2


def admin_client(settings: KafkaSettings) -> AdminClient:
    """An AdminClient for ``settings`` (librdkafka's own log lines dropped: errors come back as such)."""
    return quiet_admin(settings)


def not_ready(topics: Mapping[str, Any], expected: Mapping[str, int | None]) -> list[str]:
    """Names in ``expected`` that the metadata ``topics`` does not show usable yet: missing, in error,
    without partitions or with another count than expected (None: any), or a partition without a leader."""
    out = []
    for name, count in expected.items():
        meta = topics.get(name)
        if (
            meta is None
            or meta.error is not None
            or not meta.partitions
            or (count is not None and len(meta.partitions) != count)
            or any(p.leader < 0 or p.error is not None for p in meta.partitions.values())
        ):
            out.append(name)
    return out


def wait_until_ready(
    admin: AdminClient, expected: Mapping[str, int | None], *, timeout: float, where: str
) -> None:
    """Return once the broker's metadata shows every topic with all its partitions led; else one line.

    A create future completes when the controller has the topic, before the broker's metadata cache
    lists it: a producer or consumer started right then sees ``UNKNOWN_TOPIC_OR_PART``.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            topics = admin.list_topics(timeout=max(0.1, deadline - time.monotonic())).topics
        except KafkaException as exc:
            raise ChatlogError(f"cannot read topic metadata from Kafka at {where}: {exc}") from None
        missing = not_ready(topics, expected)
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise ChatlogError(
                f"topic(s) {', '.join(missing)} have no leader for every partition after {timeout:.0f}s "
                f"(Kafka at {where})"
            )
        time.sleep(_READY_POLL_S)


def topic_config(settings: KafkaSettings, config: Mapping[str, str]) -> dict[str, str]:
    """A topic's configs from ``schemas/topics.toml`` plus the settings' ``min.insync.replicas``."""
    min_isr = settings.topic_min_isr
    return {**config, **({"min.insync.replicas": str(min_isr)} if min_isr is not None else {})}


def ensure_topics(settings: KafkaSettings, timeout: float = 30.0) -> list[str]:
    """Create missing topics and wait until every topic is usable; returns the names that were created
    (existing ones are left alone). Kafka not reachable: :class:`~core.kafka_probe.KafkaUnreachable`."""
    existing = set(probe(settings).topics)
    specs = topic_specs(settings)
    wanted = [
        NewTopic(
            s.name,
            num_partitions=s.partitions,
            replication_factor=settings.topic_replication_factor,
            config=topic_config(settings, s.config),
        )
        for s in specs
        if s.name not in existing
    ]
    admin = admin_client(settings)
    created = []
    for name, fut in (admin.create_topics(wanted, operation_timeout=timeout) if wanted else {}).items():
        try:
            fut.result()
            created.append(name)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise ChatlogError(f"creating topic {name} failed: {exc}") from None
    expected = {s.name: (s.partitions if s.name in created else None) for s in specs}
    wait_until_ready(admin, expected, timeout=timeout, where=settings.kafka_bootstrap_servers)
    return created
