"""The multi-node stack (``chatlog stack up --nodes 3``) for the ``cluster`` tests (``make cluster``)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Iterator

import pytest

from core.kafka_admin import admin_client, ensure_topics
from core.settings import StackSettings
from lab.stack.cluster import Layout

NODES = 3


@pytest.fixture(scope="session")
def cluster() -> Iterator[Layout]:
    """The 3-node stack, started if needed (its start-up time printed) and stopped if we started it.

    Set ``CHATLOG_TEST_KEEP_CLUSTER=1`` to leave a cluster we started running after the tests."""
    from lab.stack import manager, process

    logging.getLogger("cassandra.cluster").setLevel(logging.WARNING)  # a line per discovered node
    layout = Layout(StackSettings(), NODES)
    already = all(process.read_pid(s.pid_file) is not None for s in layout.services())
    t0 = time.monotonic()
    manager.up(layout.settings, report=lambda _line: None, nodes=NODES)
    print(f"\ncluster up in {time.monotonic() - t0:.1f}s ({'already running' if already else 'started'})")
    yield layout
    if not already and os.environ.get("CHATLOG_TEST_KEEP_CLUSTER") != "1":
        t0 = time.monotonic()
        manager.down(layout.settings, report=lambda _line: None, nodes=NODES)
        print(f"\ncluster down in {time.monotonic() - t0:.1f}s")


@pytest.fixture(scope="session")
def cluster_clients(cluster: Layout) -> StackSettings:
    """Settings pointed at the cluster, with its replication (RF 3, min ISR 2, NetworkTopologyStrategy)."""
    return cluster.client_settings()


@pytest.fixture
def replicated_topics(cluster_clients: StackSettings) -> Iterator[StackSettings]:
    """Fresh topics on the cluster (RF 3, min ISR 2), deleted afterwards."""
    settings = cluster_clients.with_topics(
        f"t{uuid.uuid4().hex[:10]}", channel_buckets=3, messages_partitions=6
    )
    ensure_topics(settings)
    yield settings
    admin = admin_client(settings)
    for fut in admin.delete_topics(settings.topic_names(), operation_timeout=30).values():
        with contextlib.suppress(Exception):
            fut.result(timeout=60)
