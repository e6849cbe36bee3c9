"""On the real stack: lab.bench.cql_ping's OPTIONS is answered by the node, from concurrent callers, each on
a connection of its own while it waits."""

from __future__ import annotations

import asyncio

import pytest

from core.settings import StackSettings, load
from lab.bench.cql_ping import Pinger
from lab.bench.read_floor import cassandra_at
from sink.settings import SinkSettings

pytestmark = pytest.mark.integration


def test_the_node_answers_pings_from_concurrent_callers(stack: StackSettings) -> None:
    async def run() -> int:
        pinger = Pinger(*cassandra_at(load(SinkSettings)))
        try:

            async def caller() -> None:
                for _ in range(20):
                    await pinger.ping()

            await asyncio.gather(*(caller() for _ in range(4)))
            return len(pinger._all)
        finally:
            pinger.close()

    connections = asyncio.run(run())
    assert 1 <= connections <= 4
