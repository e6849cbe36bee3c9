"""Fixtures of the consent integration tests: a fresh keyspace filled by the sink's executor with chat
events over several channels, buckets and user periods, and a fresh opt-out topic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consent.settings import ConsentSettings
from core.settings import StackSettings
from tests.integration.consent.filled_keyspace import Filled, fill
from tests.integration.consent.optout_topic import optout_topic


@pytest.fixture
def filled(fresh_keyspace: StackSettings, tmp_path: Path) -> Filled:
    return fill(fresh_keyspace.cassandra_keyspace, tmp_path)


@pytest.fixture
def session(filled: Filled) -> Iterator[Any]:
    from core.cql import connect

    cluster, session = connect(filled.settings, keyspace=filled.settings.cassandra_keyspace)
    try:
        yield session
    finally:
        cluster.shutdown()


@pytest.fixture
def optout_settings(stack: StackSettings, unique: str) -> Iterator[ConsentSettings]:
    """Consent settings with a new opt-out topic."""
    with optout_topic(stack, f"t{unique}.optout") as settings:
        yield settings
