"""Placement by load against the real InspIRCd of the local stack: the worker capacity (at most
``ingest_max_channels`` joined, the rest over capacity, a third worker takes some), and a hot channel
moved between connections without losing a line (counted at the IRC side: what an outside user sent)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.irc_parse import parse_line
from core.settings import StackSettings, load
from core.testing import eventually
from ingest.irc import IrcPool, PoolSettings
from tests.integration.ingest.irc.observer import Observer, pool_nicks, run

pytestmark = pytest.mark.integration


def pool_settings(stack: StackSettings, **overrides: Any) -> PoolSettings:
    base: dict[str, Any] = {
        "irc_host": "127.0.0.1",
        "irc_port": stack.irc_port,
        "irc_tls": False,
        "irc_flavor": "ircv3",
        "irc_nick": "",
        "irc_oauth": "",
        "irc_join_rate": 2000,
    }
    return load(PoolSettings, **(base | overrides))


def test_worker_capacity_joins_at_most_its_limit_and_reports_the_rest(
    stack: StackSettings, unique: str
) -> None:
    channels = [f"cap{unique}x{i}" for i in range(120)]
    workers = [f"c{unique[:5]}w{i}" for i in range(3)]
    settings = pool_settings(stack, ingest_max_channels=30, irc_channels_per_connection=20)

    async def body() -> None:
        pools = [IrcPool(settings, lambda _l, _t: None, worker_id=w) for w in workers]
        runners = [asyncio.create_task(p.run()) for p in pools]
        observer = Observer(f"o{unique}")
        try:
            await observer.connect("127.0.0.1", stack.irc_port)
            # two workers own 60 channels each (their buckets)
            pools[0].set_wanted(set(channels[:60]))
            pools[1].set_wanted(set(channels[60:]))
            await eventually(lambda: all(len(p.confirmed) == 30 for p in pools[:2]), 60, "30 joined each")
            await asyncio.sleep(1.0)  # nothing more gets joined later
            members = await observer.names(channels)
            joined = {w: {ch for ch in channels if pool_nicks(members[ch], w)} for w in workers}
            assert [len(joined[w]) for w in workers] == [30, 30, 0]
            assert len(joined[workers[0]] | joined[workers[1]]) == 60
            over = pools[0].over_capacity | pools[1].over_capacity
            assert len(over) == 60 and not over & (joined[workers[0]] | joined[workers[1]])
            assert [p.stats().over_capacity for p in pools[:2]] == [30, 30]

            # a third worker: the buckets are dealt over three (40 channels each)
            thirds = [set(channels[i::3]) for i in range(3)]
            for p, share in zip(pools, thirds, strict=True):
                p.set_wanted(share)
            await eventually(lambda: all(len(p.confirmed) == 30 for p in pools), 60, "30 joined by each of 3")
            await asyncio.sleep(1.0)
            members = await observer.names(channels)
            per_worker = [sum(1 for ch in channels if pool_nicks(members[ch], w)) for w in workers]
            assert per_worker == [30, 30, 30]
            assert all(len(p.over_capacity) == 10 for p in pools)
            # a channel a worker had joined and still owns keeps its place (no churn)
            for p, share in zip(pools[:2], thirds[:2], strict=True):
                assert joined[p.worker_id] & share <= p.confirmed
        finally:
            await observer.close()
            for p in pools:
                await p.close()
            await asyncio.gather(*runners)

    run(body)


def test_a_hot_channel_moved_between_connections_loses_no_message(stack: StackSettings, unique: str) -> None:
    channels = [f"hot{unique}x{i}" for i in range(4)]
    worker = f"h{unique[:6]}"
    got: list[str] = []
    settings = pool_settings(stack, irc_channels_per_connection=3, irc_move_cooldown_s=0.0)

    async def body() -> None:
        pool = IrcPool(settings, lambda lines, _t: got.extend(lines), worker_id=worker)
        runner = asyncio.create_task(pool.run())
        observer = Observer(f"s{unique}")
        try:
            pool.set_wanted(set(channels))
            await eventually(lambda: pool.confirmed == set(channels), 30, "4 channels joined")
            conns = {c.conn_id: set(c.joined) for c in pool._conns.values()}
            assert len(conns) == 2
            busy = max(conns, key=lambda cid: len(conns[cid]))
            hot = sorted(conns[busy])
            assert len(hot) >= 2
            await observer.connect("127.0.0.1", stack.irc_port)
            await observer.join(hot)
            sent = 0
            moved_at: int | None = None
            for _round in range(600):  # up to ~12 s of chat on the busy connection's channels
                lines = []
                for ch in hot:
                    sent += 1
                    lines.append(f"PRIVMSG #{ch} :{unique} line {sent}")
                observer.send(*lines)
                await asyncio.sleep(0.02)
                if moved_at is None and pool.stats().moves:
                    moved_at = sent
                if moved_at is not None and sent >= moved_at + 200:
                    break
            assert moved_at is not None, "no channel was moved"

            def mine() -> list[str]:
                return [line for line in got if f"{unique} line " in line]

            def texts() -> set[str]:
                return {line.rsplit(" line ", 1)[1] for line in mine()}

            await eventually(lambda: len(texts()) == sent, 30, "every line sent read back")
            assert texts() == {str(i) for i in range(1, sent + 1)}  # none lost
            now = {c.conn_id: set(c.joined) for c in pool._conns.values()}
            assert len(now[busy]) == len(hot) - 1  # one channel left the busy connection
            # the overlap delivered some lines twice, with the same message id on both copies
            events = [parse_line(line, received_at=0) for line in mine()]
            ids_by_text: dict[str, set[str]] = {}
            for line, ev in zip(mine(), events, strict=True):
                assert ev is not None
                ids_by_text.setdefault(line.rsplit(" line ", 1)[1], set()).add(ev.message_id)
            assert len(mine()) > sent  # duplicates from the overlap
            assert all(len(ids) == 1 for ids in ids_by_text.values())
        finally:
            await observer.close()
            await pool.close()
            await runner

    run(body)
