"""The environment of a test's ``chatlog ingest`` processes: the test's Kafka topics and consumer group, and
the local InspIRCd."""

from __future__ import annotations

from collections.abc import Mapping

from core.settings import KafkaSettings

QUICK: Mapping[str, str] = {
    "CHATLOG_IRC_FLAVOR": "ircv3",
    "CHATLOG_IRC_JOIN_RATE": "1000",
    "CHATLOG_METRICS_PORT": "0",
}
"""Variables of ingesters that join at once and take any free metrics port (several on one host)."""


def ingester_env(kafka: KafkaSettings, irc_port: int, group: str, more: Mapping[str, str]) -> dict[str, str]:
    """Kafka and the topics of ``kafka``, the consumer group prefix ``group`` and InspIRCd on
    127.0.0.1:``irc_port``, then the ``CHATLOG_*`` variables of ``more``."""
    return {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": kafka.kafka_bootstrap_servers,
        **kafka.topic_env(),
        "CHATLOG_INGEST_GROUP_PREFIX": group,
        "CHATLOG_IRC_HOST": "127.0.0.1",
        "CHATLOG_IRC_PORT": str(irc_port),
        **more,
    }
