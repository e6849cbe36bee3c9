"""A small local Spark session for the transformation tests (no Kafka, no Cassandra).

It is the sink's own session configuration (Kafka source jars included), so that unit and integration
tests can share the one JVM a Python process gets when both run in one pytest session.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Any:
    from sink.job.session import get_session
    from sink.settings import SinkSettings

    return get_session(
        SinkSettings(spark_master="local[2]", spark_shuffle_partitions=2, spark_log_level="ERROR")  # type: ignore[call-arg]
    )
