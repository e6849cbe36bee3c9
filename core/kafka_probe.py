"""Is Kafka there? A bounded probe that answers in one line instead of pages of librdkafka logs.

A client pointed at a broker that is down logs every failed connection attempt (librdkafka's ``FAIL``
lines, many a second) and a metadata request waits out its whole timeout. The probe silences those
lines, collects the errors through ``error_cb`` instead, and gives up as soon as they are decisive
(every broker down, the login or the TLS handshake refused) or after ``timeout``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from core.errors import ChatlogError, one_line
from core.settings import KafkaSettings

PROBE_TIMEOUT_S: Final = 5.0
"""How long a command waits for Kafka's metadata before it says Kafka is not reachable."""

QUIET: Final[dict[str, Any]] = {"log_level": 0}
"""librdkafka config that drops its own log lines (errors still come back as exceptions and error_cb)."""

_SECRET_KEYS: Final = ("sasl.password", "ssl.key.password")
_LOGIN: Final = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
_DECISIVE: Final = _LOGIN | {KafkaError._ALL_BROKERS_DOWN, KafkaError._SSL}
_MAX_REASON: Final = 160
_FIRST_REQUEST: Final = ("in state APIVERSION_QUERY", "closed by peer (after")
"""In librdkafka's ``FAIL`` lines: the broker accepted the connection (TCP, or the TLS handshake: ``in
state UP``) and closed it at the client's first request, every time, which a listener does when it speaks
another protocol (TLS, SASL) than the client."""


class _Lines(logging.Handler):
    """Keeps the last librdkafka log lines of a probe, for :func:`describe` (never printed)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: deque[str] = deque(maxlen=50)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


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
    """librdkafka's own text of a :class:`KafkaError` (not its ``repr``-like ``str``), as one line."""
    return one_line(err.str() if isinstance(err, KafkaError) else err, _MAX_REASON)


def describe(settings: KafkaSettings, errors: list[KafkaError], log_lines: tuple[str, ...] = ()) -> str:
    """One line for what the probe saw: the most telling error first (login, TLS, a listener of another
    protocol, connection)."""
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
    if any(mark in line for line in log_lines for mark in _FIRST_REQUEST):
        protocol = settings.kafka_security_protocol
        return (
            f"{where} closed the connection at the first request: the listener speaks another protocol than "
            f"CHATLOG_KAFKA_SECURITY_PROTOCOL={getattr(protocol, 'value', protocol)} (TLS or SASL? check it "
            "and CHATLOG_KAFKA_BOOTSTRAP_SERVERS)"
        )
    detail = [e for e in errors if e.code() not in _DECISIVE] or errors
    reason = f": {_one_line(detail[0])}" if detail else ""
    return f"{where} is not reachable (CHATLOG_KAFKA_BOOTSTRAP_SERVERS){reason}"


def probe(settings: KafkaSettings, timeout: float = PROBE_TIMEOUT_S) -> ClusterMetadata:
    """The cluster's metadata (every topic), or :class:`KafkaUnreachable` within about ``timeout`` s."""
    errors: list[KafkaError] = []
    seen = _Lines()
    logger = logging.getLogger(f"{__name__}.librdkafka.{id(seen)}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(seen)
    try:
        return _probe(settings, timeout, errors, seen, logger)
    finally:
        logger.removeHandler(seen)
        logging.Logger.manager.loggerDict.pop(logger.name, None)


def _probe(
    settings: KafkaSettings, timeout: float, errors: list[KafkaError], seen: _Lines, logger: logging.Logger
) -> ClusterMetadata:
    # librdkafka's lines go to `seen` (6: its connection FAIL lines are informational), never to the terminal
    admin = quiet_admin(settings, error_cb=errors.append, logger=logger, log_level=6)
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
            found = errors or ([last] if last is not None else [])
            raise KafkaUnreachable(describe(settings, found, tuple(seen.lines)))
        step = min(step * 2, 1.0)
