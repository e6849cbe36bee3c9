"""A fresh opt-out topic for a test, made as ``chatlog stack`` makes it (schemas/topics.toml)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from consent.settings import ConsentSettings
from core.settings import StackSettings


@contextlib.contextmanager
def optout_topic(stack: StackSettings, name: str, **values: Any) -> Iterator[ConsentSettings]:
    """Consent settings (plus ``values``) with a new opt-out topic ``name``, created from
    schemas/topics.toml's spec and deleted afterwards."""
    from confluent_kafka.admin import NewTopic

    from core.kafka_admin import admin_client, wait_until_ready
    from schemas.topics import topic_specs

    spec = next(s for s in topic_specs() if s.role == "optout")
    common = {k: getattr(stack, k) for k in StackSettings.model_fields if k in ConsentSettings.model_fields}
    settings = ConsentSettings(**{**common, **values, "topic_optout": name})
    admin = admin_client(settings)
    new = NewTopic(settings.topic_optout, spec.partitions, 1, config=spec.config)
    for fut in admin.create_topics([new]).values():
        fut.result(timeout=30)
    wait_until_ready(admin, {settings.topic_optout: spec.partitions}, timeout=30, where="test")
    try:
        yield settings
    finally:
        for fut in admin.delete_topics([settings.topic_optout], operation_timeout=30).values():
            with contextlib.suppress(Exception):
                fut.result(timeout=60)
