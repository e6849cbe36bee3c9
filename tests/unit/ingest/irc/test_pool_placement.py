"""The pool's placement against the fake IRC server: worker capacity, and a hot connection's channel
moved make-before-break (JOIN on the target, PART on the source only after the echo; no line lost)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from ingest.irc import IrcPool
from ingest.irc.testing import FakeIrcServer
from tests.unit.ingest.irc.pool_settings import settings


def capacity_pool(server: FakeIrcServer, worker_id: str) -> IrcPool:
    """A pool of capacity 4 (``ingest_max_channels``), 3 channels per connection, lines dropped."""
    overrides: dict[str, Any] = {"ingest_max_channels": 4, "irc_channels_per_connection": 3}
    return IrcPool(
        settings(server.port, **overrides), lambda _l, _t: None, worker_id=worker_id, rng=random.Random(1)
    )


def test_capacity_joins_at_most_max_channels_and_reports_the_rest() -> None:
    async def main() -> None:
        async with FakeIrcServer() as server:
            pool = capacity_pool(server, "cap")
            runner = asyncio.create_task(pool.run())
            wanted = {f"c{i}" for i in range(10)}
            try:
                pool.set_wanted(wanted)
                await server.wait_for(lambda: len(pool.confirmed) == 4)
                await asyncio.sleep(0.5)
                assert len(pool.confirmed) == 4
                assert sum(len(c.joined) for c in server.live()) == 4  # the server agrees
                assert pool.over_capacity == wanted - pool.confirmed
                assert pool.stats().over_capacity == 6
                first = pool.confirmed
                pool.set_wanted(wanted | {"a0", "a1"})  # new channels do not push joined ones out
                await asyncio.sleep(0.5)
                assert pool.confirmed == first and len(pool.over_capacity) == 8
                gone = sorted(first)[0]
                pool.set_wanted(wanted - {gone})  # room again: one more is joined
                await server.wait_for(lambda: len(pool.confirmed) == 4 and gone not in pool.confirmed)
                assert first - {gone} < pool.confirmed
            finally:
                await pool.close()
                await asyncio.wait_for(runner, 10)

    asyncio.run(main())


def test_capacity_holds_at_the_server_while_parts_are_unanswered() -> None:
    """A worker handed other channels parts the old ones and joins the new ones only as the server
    answers the PARTs: never more than ``ingest_max_channels`` channels at the server at once."""

    async def main() -> None:
        async with FakeIrcServer() as server:
            pool = capacity_pool(server, "swap")
            runner = asyncio.create_task(pool.run())
            try:
                pool.set_wanted({f"old{i}" for i in range(6)})
                await server.wait_for(lambda: len(pool.confirmed) == 4)
                server.part_delay_s = 0.6
                new = {f"new{i}" for i in range(6)}
                pool.set_wanted(new)
                peak = 0
                while not (len(pool.confirmed) == 4 and pool.confirmed <= new):
                    held: set[str] = set()
                    for client in server.live():
                        held |= client.joined
                    peak = max(peak, len(held))
                    await asyncio.sleep(0.01)
                assert peak == 4
            finally:
                await pool.close()
                await asyncio.wait_for(runner, 10)

    asyncio.run(main())


def test_a_hot_connection_moves_a_channel_make_before_break_without_losing_a_line() -> None:
    got: list[str] = []

    async def main() -> None:
        async with FakeIrcServer() as server:
            overrides: dict[str, Any] = {"irc_channels_per_connection": 3, "irc_move_cooldown_s": 0.0}
            pool = IrcPool(
                settings(server.port, **overrides),
                lambda lines, _t: got.extend(lines),
                worker_id="mv",
                rng=random.Random(1),
            )
            runner = asyncio.create_task(pool.run())
            try:
                pool.set_wanted({"a", "b", "c", "d"})
                await server.wait_for(lambda: len(pool.confirmed) == 4)
                busy = max(server.live(), key=lambda c: len(c.joined))
                idle = next(c for c in server.live() if c is not busy)
                hot = sorted(busy.joined)
                sent: list[str] = []
                n = 0
                moved = False
                for _ in range(400):  # ~4 s of chat on the busy connection's channels
                    for ch in hot:
                        n += 1
                        sent.append(f"m{n}")
                        server.privmsg(ch, f"line {n}", msgid=f"m{n}")
                    await asyncio.sleep(0.01)
                    if any(ch in idle.joined for ch in hot) and not moved:
                        moved = True
                assert moved, "no channel moved to the idle connection"
                await server.wait_for(lambda: len(busy.joined) == len(hot) - 1)
                m = next(ch for ch in hot if ch in idle.joined)
                join_seq = next(s for s, line in idle.received if line == f"JOIN #{m}")
                part_seq = next(s for s, line in busy.received if line == f"PART #{m}")
                assert join_seq < part_seq
                # the JOIN echo came before the PART was sent: lines of both overlapped
                await server.wait_for(lambda: {f"m{i}" for i in range(1, n + 1)} <= _ids(got))
                assert len(got) > n  # duplicates from the overlap (removed downstream by id)
                assert pool.stats().moves >= 1 and pool.stats().msgs_per_s > 0
                assert pool.confirmed == {"a", "b", "c", "d"}
            finally:
                await pool.close()
                await asyncio.wait_for(runner, 10)

    asyncio.run(main())


def _ids(lines: list[str]) -> set[str]:
    return {line.split(";", 1)[0].removeprefix("@msgid=") for line in lines if line.startswith("@msgid=")}


def test_lines_are_counted_per_channel_while_they_are_routed() -> None:
    from ingest.irc.lines import route_lines

    counts: dict[str, int] = {}
    lines = [
        "@id=1;color=#FF0000 :a!a@a.tmi.twitch.tv PRIVMSG #Chan :hi #other",
        ":a!a@a PRIVMSG #chan :again",
        "@msg-id=x :tmi.twitch.tv USERNOTICE #b",
        "CLEARCHAT #b",
        ":tmi.twitch.tv NOTICE * :no channel here",
        ":tmi.twitch.tv PING :x",
    ]
    out = route_lines(lines, lambda line: "PING" in line, counts)
    assert out == lines[:5]
    assert counts == {"Chan": 1, "chan": 1, "b": 2}  # the pool lower-cases when it folds them
    assert route_lines(lines, lambda _l: False) == lines  # without counts: unchanged


def test_pool_metrics_export_rate_cpu_moves_and_over_capacity() -> None:
    import dataclasses

    from prometheus_client import REGISTRY

    from ingest.irc.metrics import PoolMetrics
    from ingest.irc.stats import PoolStats

    zeros: dict[str, Any] = {f.name: 0 for f in dataclasses.fields(PoolStats)}
    stats = PoolStats(**(zeros | {"over_capacity": 7, "msgs_per_s": 123.5, "cpu_s_per_msg": 2e-5}))
    m = PoolMetrics("metrics-test")
    m.publish(stats)
    m.move()
    value = REGISTRY.get_sample_value
    assert value("chatlog_irc_channels_over_capacity", {"worker": "metrics-test"}) == 7
    assert value("chatlog_irc_messages_per_second", {"worker": "metrics-test"}) == 123.5
    assert value("chatlog_irc_cpu_seconds_per_message", {"worker": "metrics-test"}) == 2e-5
    assert value("chatlog_irc_channel_moves_total", {"worker": "metrics-test"}) == 1
