"""core/cql.py on the real Cassandra: a session's requests are sent at once, whatever their size.

The driver leaves Nagle's algorithm on; an unlogged batch of block rows of a few KB then waited for the node's
delayed ACK: 44 ms here against 0.5 ms.
"""

from __future__ import annotations

import socket
import statistics
import time

import pytest

from core.cql import connect
from core.settings import StackSettings

pytestmark = pytest.mark.integration


def test_every_connection_sends_at_once(stack: StackSettings) -> None:
    cluster, session = connect(stack)
    try:
        pools = list(session._pools.values())  # the driver's per-host pools: no public handle on sockets
        assert pools
        for pool in pools:
            sock = pool._connection._socket
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        cluster.shutdown()


def test_a_batch_of_large_rows_takes_no_delayed_ack(fresh_keyspace: StackSettings) -> None:
    """An unlogged batch of two 8 KB rows (as the sink sends blocks): the median of 20 round trips well under
    the 40 ms a delayed ACK adds (44 ms here without TCP_NODELAY, 0.5 ms with it)."""
    from cassandra.query import BatchStatement, BatchType

    keyspace = fresh_keyspace.cassandra_keyspace
    cluster, session = connect(fresh_keyspace)
    try:
        session.execute(f"CREATE TABLE {keyspace}.nagle (k int, c int, v blob, PRIMARY KEY (k, c))")
        insert = session.prepare(f"INSERT INTO {keyspace}.nagle (k, c, v) VALUES (?, ?, ?)")
        times = []
        for i in range(20):
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            for j in range(2):
                batch.add(insert, (i * 10 + j, j, bytes(8_000)))
            start = time.perf_counter()
            session.execute(batch)
            times.append(time.perf_counter() - start)
        assert statistics.median(times) < 0.020, times
    finally:
        cluster.shutdown()
