"""Kafka settings with SASL_SSL and a CA, shared by the tests of every client that takes them."""

from __future__ import annotations

from typing import Any

from core.settings import KafkaSettings, load

SECRET = 's3cr\\et"pass'
"""A password with a backslash and a quote: both must be escaped where it is quoted (Spark's JAAS line)."""


def kafka(**kw: Any) -> KafkaSettings:
    return load(KafkaSettings, **kw)


def sasl_ssl(ca: object, **kw: Any) -> KafkaSettings:
    """SASL_SSL with SCRAM-SHA-512, the user ``chatlog``, :data:`SECRET` and the CA file ``ca``."""
    values: dict[str, Any] = {
        "kafka_security_protocol": "SASL_SSL",
        "kafka_sasl_mechanism": "SCRAM-SHA-512",
        "kafka_sasl_username": "chatlog",
        "kafka_sasl_password": SECRET,
        "kafka_ssl_ca_location": str(ca),
    }
    return kafka(**{**values, **kw})
