"""A demo run's own Kafka topics on the real stack: those of earlier runs of its name go when it starts."""

from __future__ import annotations

import pytest

from core.kafka_admin import ensure_topics
from core.settings import StackSettings
from lab.bench.scratch import delete_topics
from lab.demo.run import Run, RunConfig, run_settings
from tests.kafka_topics import topics_named

pytestmark = pytest.mark.integration


def test_a_run_deletes_the_topics_of_earlier_runs_of_its_name_and_no_others(
    stack: StackSettings, unique: str
) -> None:
    name, other = f"dr{unique}", f"dr{unique}x"
    earlier = run_settings(stack, name, "a1b2c3")
    another = run_settings(stack, other, "d4e5f6")
    try:
        ensure_topics(earlier)
        ensure_topics(another)
        run = Run(stack, RunConfig(name=name), None)
        run.drop_earlier_topics()
        assert topics_named(stack, f"{name}.", gone=True) == set()
        assert topics_named(stack, f"{other}.") == set(another.topic_names())
        ensure_topics(run.settings)  # as the run's set-up goes on: its own topics are made after
        assert topics_named(stack, f"{name}.") == set(run.settings.topic_names())
    finally:
        delete_topics(stack, (f"{name}.", f"{other}."))
