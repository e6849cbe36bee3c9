"""ingest/irc/read_tick.py: a connection that read is held until the tick ends, and then reads in one go
what arrived meanwhile; nothing is lost or reordered, and a read that filled the buffer is not held."""

from __future__ import annotations

import asyncio
import random
import time

from ingest.irc import IrcPool
from ingest.irc.read_tick import FULL_READ_BYTES, ReadTick
from ingest.irc.testing import FakeIrcServer
from tests.unit.ingest.irc.pool_settings import settings


class _Conn:
    def __init__(self, can_hold: bool = True) -> None:
        self.can_hold, self.held, self.releases = can_hold, False, 0

    def hold(self) -> bool:
        if not self.can_hold or self.held:
            return False
        self.held = True
        return True

    def release(self) -> None:
        self.held = False
        self.releases += 1


def test_a_read_holds_its_connection_until_the_tick_ends_for_all_held_together() -> None:
    async def main() -> None:
        tick = ReadTick(0.05)
        a, b, full, closed = _Conn(), _Conn(), _Conn(), _Conn(can_hold=False)
        tick.read(a, 100)
        await asyncio.sleep(0.02)
        tick.read(b, 100)
        tick.read(full, FULL_READ_BYTES)  # more may be waiting: not held
        tick.read(closed, 10)
        assert (a.held, b.held, full.held) == (True, True, False)
        await asyncio.sleep(0.045)  # the tick of the first read is over: both are released at once
        assert (a.held, b.held, a.releases, b.releases) == (False, False, 1, 1)
        assert closed.releases == 0
        tick.read(a, 1)
        tick.close()
        assert not a.held and a.releases == 2

    asyncio.run(main())


def test_lines_said_within_a_tick_reach_the_caller_in_one_batch_in_order() -> None:
    batches: list[list[str]] = []

    async def main() -> None:
        async with FakeIrcServer() as server:
            pool = IrcPool(
                settings(server.port, irc_read_interval_ms=300),
                lambda lines, _ts: batches.append(list(lines)),
                worker_id="tick",
                rng=random.Random(1),
            )
            runner = asyncio.create_task(pool.run())
            pool.set_wanted({"a"})
            try:
                await server.wait_for(lambda: pool.confirmed == {"a"})
                server.privmsg("a", "first", msgid="m0")
                await server.wait_for(lambda: len(batches) == 1)
                started = time.monotonic()
                for i in range(1, 6):  # said while the connection is held: read together at the tick's end
                    server.privmsg("a", f"line {i}", msgid=f"m{i}")
                    await asyncio.sleep(0.01)
                await server.wait_for(lambda: sum(map(len, batches)) == 6)
                assert time.monotonic() - started >= 0.2  # held, not read line by line
            finally:
                await pool.close()
                await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    assert len(batches) == 2
    assert [line.rsplit(":", 1)[1] for line in batches[1]] == [f"line {i}" for i in range(1, 6)]
