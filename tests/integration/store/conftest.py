"""Fixtures of the store's integration tests: the consent tests' filled keyspace and its session (erasure is
tested on both)."""

from tests.integration.consent.filled_keyspace import filled, session  # noqa: F401  (fixtures, shared)
