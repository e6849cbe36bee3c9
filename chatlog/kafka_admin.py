"""Kafka administration: creating the topics of ``schemas/topics.toml``."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from chatlog.errors import ChatlogError
from chatlog.settings import KafkaSettings
from schemas.topics import topic_specs


def admin_client(settings: KafkaSettings) -> AdminClient:
    return AdminClient(settings.kafka_client_config())


def ensure_topics(settings: KafkaSettings, timeout: float = 30.0) -> list[str]:
    """Create missing topics; returns the names that were created (existing ones are left alone)."""
    admin = admin_client(settings)
    try:
        existing = set(admin.list_topics(timeout=timeout).topics)
    except KafkaException as exc:
        raise ChatlogError(f"cannot reach Kafka at {settings.kafka_bootstrap_servers}: {exc}") from None
    wanted = [
        NewTopic(
            s.name,
            num_partitions=s.partitions,
            replication_factor=settings.topic_replication_factor,
            config=s.config,
        )
        for s in topic_specs(settings)
        if s.name not in existing
    ]
    if not wanted:
        return []
    created = []
    for name, fut in admin.create_topics(wanted, operation_timeout=timeout).items():
        try:
            fut.result()
            created.append(name)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise ChatlogError(f"creating topic {name} failed: {exc}") from None
    return created
