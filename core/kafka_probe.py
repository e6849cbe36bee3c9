"""Is Kafka there? A bounded probe that answers in one line instead of pages of librdkafka logs.

A client pointed at a broker that is down logs every failed connection attempt (librdkafka's ``FAIL``
lines, many a second) and a metadata request waits out its whole timeout. The probe silences those
lines, collects the errors through ``error_cb`` instead, and gives up as soon as they are decisive
(every broker down, the login or the TLS handshake refused) or after ``timeout``.
"""

from __future__ import annotations

import time
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from core.errors import ChatlogError
from core.settings import KafkaSettings

PROBE_TIMEOUT_S: Final = 5.0
"""How long a command waits for Kafka's metadata before it says Kafka is not reachable."""

QUIET: Final[dict[str, Any]] = {"log_level": 0}
"""librdkafka config that drops its own log lines (errors still come back as exceptions and error_cb)."""

_SECRET_KEYS: Final = ("sasl.password", "ssl.key.password")
_LOGIN: Final = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
_DECISIVE: Final = _LOGIN | {KafkaError._ALL_BROKERS_DOWN, KafkaError._SSL}
_MAX_REASON: Final = 160


class KafkaUnreachable(ChatlogError):
    """Kafka did not answer a metadata request (down, wrong address, login or TLS refused)."""


def _redact(text: str, conf: dict[str, Any]) -> str:
    for key in _SECRET_KEYS:
        value = conf.get(key)
        if isinstance(value, str) and value:
            text = text.replace(value, "***")
    return text


def quiet_admin(settings: KafkaSettings, **extra: Any) -> AdminClient:
    """An AdminClient whose librdkafka log lines are dropped; a rejected config is one line."""
    conf = {**settings.kafka_client_config(), **QUIET, **extra}
    try:
        return AdminClient(conf)
    except KafkaException as exc:
        reason = _redact(_one_line(exc.args[0] if exc.args else exc), conf)
        raise ChatlogError(f"Kafka client settings rejected: {reason}") from None


def _one_line(err: object) -> str:
    text = err.str() if isinstance(err, KafkaError) else str(err)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def describe(settings: KafkaSettings, errors: list[KafkaError]) -> str:
    """One line for what the probe saw: the most telling error first (login, TLS, connection)."""
    where = f"Kafka at {settings.kafka_bootstrap_servers}"
    login = [e for e in errors if e.code() in _LOGIN]
    if login:
        return (
            f"SASL login to {where} failed (CHATLOG_KAFKA_SECURITY_PROTOCOL, CHATLOG_KAFKA_SASL_MECHANISM, "
            f"CHATLOG_KAFKA_SASL_USERNAME, CHATLOG_KAFKA_SASL_PASSWORD): {_one_line(login[0])}"
        )
    tls = [e for e in errors if e.code() == KafkaError._SSL]
    if tls:
        return f"TLS with {where} failed (CHATLOG_KAFKA_SECURITY_PROTOCOL): {_one_line(tls[0])}"
    detail = [e for e in errors if e.code() not in _DECISIVE] or errors
    reason = f": {_one_line(detail[0])}" if detail else ""
    return f"{where} is not reachable (CHATLOG_KAFKA_BOOTSTRAP_SERVERS){reason}"


def probe(settings: KafkaSettings, timeout: float = PROBE_TIMEOUT_S) -> ClusterMetadata:
    """The cluster's metadata (every topic), or :class:`KafkaUnreachable` within about ``timeout`` s."""
    errors: list[KafkaError] = []
    admin = quiet_admin(settings, error_cb=errors.append)
    deadline = time.monotonic() + timeout
    step = 0.25
    while True:
        try:
            metadata: ClusterMetadata = admin.list_topics(
                timeout=max(0.05, min(step, deadline - time.monotonic()))
            )
            return metadata
        except KafkaException as exc:
            last = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        admin.poll(0)  # serves error_cb
        if any(e.code() in _DECISIVE for e in errors) or time.monotonic() >= deadline:
            seen = errors or ([last] if last is not None else [])
            raise KafkaUnreachable(describe(settings, seen))
        step = min(step * 2, 1.0)
