"""Fixtures of the store's integration tests: a session on the test's fresh keyspace, and the consent tests'
filled keyspace (erasure is tested on it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from core.cql import connect
from core.settings import StackSettings
from tests.integration.consent.filled_keyspace import filled  # noqa: F401  (a fixture, shared)


@pytest.fixture
def session(fresh_keyspace: StackSettings) -> Iterator[Any]:
    """A session on the test's fresh keyspace (the one ``filled`` fills), that keyspace set: the reader's
    statements name none."""
    cluster, session = connect(fresh_keyspace, keyspace=fresh_keyspace.cassandra_keyspace)
    try:
        yield session
    finally:
        cluster.shutdown()
