"""The Kafka topics a test finds on the real stack by their name's prefix."""

from __future__ import annotations

import time

from core.kafka_admin import admin_client
from core.settings import StackSettings


def topics_named(
    settings: StackSettings, prefix: str, *, gone: bool = False, wait_s: float = 15.0
) -> set[str]:
    """Topics whose names start with ``prefix``; with ``gone``, waits (a while) until there are none."""
    admin = admin_client(settings)
    deadline = time.monotonic() + wait_s
    while True:
        names = {t for t in admin.list_topics(timeout=30).topics if t.startswith(prefix)}
        if not gone or not names or time.monotonic() > deadline:
            return names
        time.sleep(0.5)
