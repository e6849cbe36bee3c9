"""The IRC pool against the real InspIRCd of the local stack, checked by a separate raw-socket client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from core.settings import StackSettings, load
from core.testing import eventually
from ingest.irc import IrcPool, PoolSettings
from tests.integration.ingest.irc.observer import Observer, pool_nicks, run

pytestmark = pytest.mark.integration


def test_pool_joins_parts_reads_and_recovers_on_inspircd(stack: StackSettings, unique: str) -> None:
    worker = f"it{unique[:6]}"
    channels = [f"p{unique}x{i}" for i in range(150)]
    got: list[tuple[str, int]] = []
    settings = load(
        PoolSettings,
        irc_host="127.0.0.1",
        irc_port=stack.irc_port,
        irc_tls=False,
        irc_flavor="ircv3",
        irc_nick="",
        irc_oauth="",
        irc_channels_per_connection=40,
        irc_join_rate=2000,
        irc_reconnect_backoff_min_s=0.2,
        irc_reconnect_backoff_max_s=1.0,
    )

    def on_lines(lines: list[str], received_at_ms: int) -> None:
        got.extend((line, received_at_ms) for line in lines)

    async def body() -> None:
        pool = IrcPool(settings, on_lines, worker_id=worker)
        runner = asyncio.create_task(pool.run())
        observer = Observer(f"o{unique}")
        try:
            pool.set_wanted(set(channels))
            await observer.connect("127.0.0.1", stack.irc_port)
            await eventually(lambda: pool.confirmed == set(channels), 90, "150 channels confirmed")
            assert pool.stats().connections == 4  # 150 channels, 40 per connection
            members = await observer.names(channels)
            assert all(len(pool_nicks(members[ch], worker)) == 1 for ch in channels), members

            # Outside chat reaches on_lines with IRCv3 msgid and server time.
            talk = channels[:3]
            await observer.join(talk)
            before_ms = int(time.time() * 1000)
            observer.send(*(f"PRIVMSG #{ch} :hello {unique} {ch}" for ch in talk))
            await eventually(lambda: sum(f"hello {unique}" in line for line, _ in got) == 3, 30, "3 PRIVMSGs")
            chat = [(line, ms) for line, ms in got if f"hello {unique}" in line]
            for line, ms in chat:
                assert line.startswith("@") and "msgid=" in line and "time=" in line, line
                assert f" PRIVMSG #p{unique}x" in line
                assert ms >= before_ms - 1000
            assert any(f"o{unique}!" in line and " JOIN " in line for line, _ in got)  # others' JOINs too

            # A smaller wanted set: the rest is parted.
            keep = channels[:50]
            pool.set_wanted(set(keep))
            await eventually(lambda: pool.confirmed == set(keep), 60, "parted down to 50")
            members = await observer.names(channels)
            assert all(len(pool_nicks(members[ch], worker)) == 1 for ch in keep)
            assert all(not pool_nicks(members[ch], worker) for ch in channels[50:])

            # Kill the pool's sockets: it reconnects (after a backoff) and re-joins everything.
            old_ids = {c.conn_id for c in _connections(pool)}
            for conn in _connections(pool):
                conn.abort()
            await eventually(lambda: not pool.confirmed, 5, "the loss to be noticed")
            await eventually(lambda: pool.confirmed == set(keep), 60, "re-joined after the sockets died")
            assert not old_ids & {c.conn_id for c in _connections(pool)}  # new connections
            assert pool.stats().reconnects == len(old_ids)
            members = await observer.names(channels)
            assert all(len(pool_nicks(members[ch], worker)) == 1 for ch in keep), members
            assert all(not pool_nicks(members[ch], worker) for ch in channels[50:])
        finally:
            await observer.close()
            await pool.close()
            await runner

    run(body)


def _connections(pool: IrcPool) -> list[Any]:
    """The pool's live connections (test-only peek, to kill one socket)."""
    return list(pool._conns.values())
