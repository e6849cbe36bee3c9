"""Fixtures of the consent integration tests: a fresh keyspace filled by the sink's executor with chat
events over several channels, buckets and user periods, and a fresh opt-out topic."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from consent.settings import ConsentSettings
from core.settings import StackSettings
from tests.integration.consent.filled_keyspace import filled, session  # noqa: F401  (fixtures)
from tests.integration.consent.optout_topic import optout_topic


@pytest.fixture
def optout_settings(stack: StackSettings, unique: str) -> Iterator[ConsentSettings]:
    """Consent settings with a new opt-out topic."""
    with optout_topic(stack, f"t{unique}.optout") as settings:
        yield settings
