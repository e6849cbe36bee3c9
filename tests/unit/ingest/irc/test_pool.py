"""The pool against the in-process fake IRC server (ingest.irc.testing): protocol behaviour only.

Timings are shortened through settings; assertions are about what happened and in which order, and
lower bounds the design guarantees (backoff), never upper bounds on speed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from ingest.irc import IrcPool
from ingest.irc.testing import FakeClient, FakeIrcServer
from tests.unit.ingest.irc.pool_settings import settings

Body = Callable[[FakeIrcServer, IrcPool, list[str]], Awaitable[None]]


def run_pool(body: Body, *, wanted: set[str], worker: str = "w1", **overrides: Any) -> list[str]:
    """Start a fake server and a pool wanting ``wanted``, run ``body``, close; returns lines read."""
    got: list[str] = []

    async def main() -> None:
        async with FakeIrcServer() as server:
            pool = IrcPool(
                settings(server.port, **overrides),
                lambda lines, _ts: got.extend(lines),
                worker_id=worker,
                rng=random.Random(1),
            )
            runner = asyncio.create_task(pool.run())
            pool.set_wanted(wanted)
            try:
                await asyncio.wait_for(body(server, pool, got), 20)
            finally:
                await pool.close()
                await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    return got


def joins(client: FakeClient, channel: str) -> int:
    return sum(1 for line in client.commands("JOIN") if line.split()[1].lstrip(":") == f"#{channel}")


def test_registers_joins_and_hands_over_chat_but_not_protocol_lines() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == {"a", "b"})
        client = server.clients[0]
        assert client.received[0][1] == "CAP REQ :message-tags server-time"
        assert "CAP END" in [line for _, line in client.received]
        assert client.nick.startswith("wm-1-") and len(client.nick) <= 30
        server.send(client, "PING :keepalive-check")
        server.send(client, ":fake 372 x :motd line")
        assert server.privmsg("a", "hello", msgid="m1") == 1
        await server.wait_for(lambda: len(got) == 1)
        await server.wait_for(lambda: "PONG :keepalive-check" in [line for _, line in client.received])
        assert got == ["@msgid=m1;time=2026-01-01T00:00:00.000Z :alice!alice@fake PRIVMSG #a :hello"]
        stats = pool.stats()
        assert (stats.connections, stats.confirmed, stats.pending_joins, stats.lines_read) == (1, 2, 0, 1)

    run_pool(body, wanted={"a", "#B"}, worker="wm")
    sample = REGISTRY.get_sample_value
    assert sample("chatlog_irc_lines_read_total", {"worker": "wm"}) == 1
    assert sample("chatlog_irc_joins_sent_total", {"worker": "wm"}) == 2
    assert sample("chatlog_irc_channels_wanted", {"worker": "wm"}) == 2
    assert sample("chatlog_irc_connections", {"worker": "wm", "state": "ready"}) == 0  # after close


def test_at_most_k_channels_per_connection_and_each_joined_once() -> None:
    wanted = {f"ch{i}" for i in range(7)}

    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == wanted)
        live = server.live()
        assert len(live) == 3
        assert all(len(c.joined) <= 3 for c in live)
        assert sorted(ch for c in live for ch in c.joined) == sorted(wanted)
        assert all(joins(c, ch) == 1 for c in live for ch in c.joined)

    run_pool(body, wanted=wanted, irc_channels_per_connection=3)


def test_unwanted_channels_are_parted_and_idle_connections_closed() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        await server.wait_for(lambda: len(pool.confirmed) == 4)
        keep = set(server.live()[0].joined)  # the channels of one connection (joins are spread)
        assert len(keep) == 2
        pool.set_wanted(keep)
        await server.wait_for(lambda: pool.confirmed == keep)
        await server.wait_for(lambda: len(server.live()) == 1)
        parted = [line for c in server.clients for line in c.commands("PART")]
        assert sorted(parted) == sorted(f"PART #{ch}" for ch in {"c0", "c1", "c2", "c3"} - keep)
        assert server.live()[0].joined == keep

    run_pool(body, wanted={"c0", "c1", "c2", "c3"}, irc_channels_per_connection=2)


def test_reconnect_is_make_before_break_and_both_connections_deliver_meanwhile() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == {"a", "b", "c"})
        old = server.clients[0]
        server.silent_join = lambda index, ch: index == 1 and ch == "c"  # the new conn is slow on #c
        server.send(old, ":tmi.twitch.tv RECONNECT")
        await server.wait_for(lambda: len(server.clients) == 2 and server.clients[1].joined == {"a", "b"})
        new = server.clients[1]
        assert not old.closed  # #c is only on the old connection: it must stay
        assert server.privmsg("a", "during the overlap", msgid="dup") == 2
        await server.wait_for(lambda: len(got) == 2)  # from both connections; dedup is downstream
        server.silent_join = lambda _i, _ch: False  # the watchdog's retry on the new conn succeeds
        await server.wait_for(lambda: old.closed)
        assert new.joined == {"a", "b", "c"}
        last_join = max(seq for seq, line in new.received if line.startswith("JOIN"))
        quit_seq = next(seq for seq, line in old.received if line.startswith("QUIT"))
        assert quit_seq > last_join
        assert not old.commands("PART")  # nothing left before the new connection had it
        assert pool.confirmed == {"a", "b", "c"}
        assert pool.stats().reconnects == 1

    run_pool(body, wanted={"a", "b", "c"})


def test_a_worker_at_capacity_moves_its_channels_to_the_new_connection_on_reconnect() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        await server.wait_for(lambda: len(pool.confirmed) == 3)
        first = pool.confirmed
        old = server.clients[0]
        server.send(old, ":tmi.twitch.tv RECONNECT")  # the same channels again: no new one, no room needed
        await server.wait_for(lambda: old.closed and len(server.clients) == 2)
        assert server.clients[1].joined == first
        assert pool.confirmed == first and len(pool.over_capacity) == 2

    run_pool(body, wanted={"a", "b", "c", "d", "e"}, ingest_max_channels=3)


def test_join_watchdog_retries_then_moves_the_channel_to_a_fresh_connection() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        server.silent_join = lambda index, ch: index == 0 and ch == "mute"
        await server.wait_for(lambda: pool.confirmed == {"a", "mute"})
        first, fresh = server.clients
        assert joins(first, "mute") == 3  # the JOIN and 2 retries
        assert joins(fresh, "mute") == 1
        assert fresh.joined == {"mute"}
        assert first.joined == {"a"}
        assert pool.stats().join_timeouts == 1

    run_pool(body, wanted={"a", "mute"}, irc_join_retries=2)


def test_ping_timeout_reconnects_with_growing_backoff_and_rejoins() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        server.answer_ping = False
        await server.wait_for(lambda: len(server.clients) >= 4, timeout=15)
        server.answer_ping = True
        await server.wait_for(lambda: pool.confirmed == {"a"} and pool.stats().connections == 1)
        assert server.clients[0].commands("PING") == ["PING :chatlog-1"]
        # The n-th loss in a row waits at least half of min(max, min * 2**(n-1)) (jitter 0.5..1).
        for n, (lost, after) in enumerate(zip(server.clients[:3], server.clients[1:4], strict=True), 1):
            assert lost.closed_at is not None
            floor = 0.5 * min(0.8, 0.2 * 2 ** (n - 1))
            assert after.connected_at - lost.closed_at >= floor - 0.03
        assert pool.stats().reconnects >= 3
        assert server.live()[-1].joined == {"a"}

    run_pool(
        body,
        wanted={"a"},
        irc_ping_interval_s=0.2,
        irc_ping_timeout_s=0.3,
        irc_reconnect_backoff_min_s=0.2,
        irc_reconnect_backoff_max_s=0.8,
    )


def test_nick_in_use_picks_another_nick() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        server.nick_taken = lambda client, _nick: len(client.commands("NICK")) == 1
        pool.set_wanted({"a", "b"})
        await server.wait_for(lambda: pool.confirmed == {"a", "b"})
        client = server.clients[0]
        first, second = (line.split()[1] for line in client.commands("NICK"))
        assert first != second and client.nick == second
        assert second.startswith("w9-1-") and len(second) <= 30
        assert pool.stats().nick_collisions == 1

    run_pool(body, wanted=set(), worker="w9")


def test_refused_join_puts_the_channel_in_backoff_instead_of_hammering() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        server.silent_join = lambda _i, ch: ch == "banned"
        pool.set_wanted({"a", "banned"})
        await server.wait_for(lambda: pool.confirmed == {"a"} and joins(server.clients[0], "banned") == 1)
        client = server.clients[0]
        server.send(client, f":fake 474 {client.nick} #banned :Cannot join channel (+b)")
        await server.wait_for(lambda: pool.stats().blocked == 1)
        await asyncio.sleep(1.0)  # > 3 ack timeouts: a timed-out JOIN would have been retried
        assert joins(client, "banned") == 1
        assert pool.stats().pending_joins == 0

    run_pool(body, wanted=set())


def test_close_parts_and_quits() -> None:
    clients: list[FakeClient] = []

    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == {"a", "b"})
        clients.extend(server.clients)

    run_pool(body, wanted={"a", "b"})
    (client,) = clients
    assert client.commands("PART") == ["PART #a", "PART #b"]
    assert client.commands("QUIT")


def test_invalid_channel_names_are_ignored_and_names_normalised() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        assert pool.wanted == {"good", "mixed"}
        await server.wait_for(lambda: pool.confirmed == {"good", "mixed"})

    run_pool(body, wanted={"good", "#Mixed", "has space", "a,b", ""})


def test_on_lines_failure_stops_the_pool_and_surfaces_from_run() -> None:
    async def main() -> None:
        async with FakeIrcServer() as server:

            def broken(_lines: list[str], _ts: int) -> None:
                raise RuntimeError("producer bug")

            pool = IrcPool(settings(server.port), broken, worker_id="w1")
            runner = asyncio.create_task(pool.run())
            pool.set_wanted({"a"})
            await server.wait_for(lambda: pool.confirmed == {"a"})
            server.privmsg("a", "boom")
            with pytest.raises(RuntimeError, match="producer bug"):
                await asyncio.wait_for(runner, 5)
            await pool.close()

    asyncio.run(main())


def test_paused_pool_reads_nothing_keeps_its_connections_and_catches_up_on_resume() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == {"a"})
        server.answer_ping = False  # a PING sent while paused would time out
        pool.pause_reading()
        for i in range(3):
            server.privmsg("a", f"while paused {i}")
        await asyncio.sleep(0.8)  # > ping interval + ping timeout
        assert got == []
        assert pool.stats().reconnects == 0 and len(server.live()) == 1
        pool.resume_reading()
        await server.wait_for(lambda: len(got) == 3)
        assert [line.rsplit(":", 1)[1] for line in got] == [f"while paused {i}" for i in range(3)]

    run_pool(body, wanted={"a"}, irc_ping_interval_s=0.2, irc_ping_timeout_s=0.2)


def test_draining_connection_is_closed_after_the_drain_timeout_even_if_not_replaced() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, _got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == {"a"})
        old = server.clients[0]
        server.silent_join = lambda index, _ch: index >= 1  # no new connection ever gets #a
        server.send(old, "RECONNECT")
        await server.wait_for(lambda: old.closed, timeout=10)
        (quit_line,) = old.commands("QUIT")
        assert "drained" in quit_line
        assert old.closed_at is not None and old.closed_at - old.connected_at >= 0.8

    run_pool(body, wanted={"a"}, irc_drain_timeout_s=0.8)


def test_twitch_flavor_registers_anonymously_and_treats_a_suspension_notice_as_a_refused_join() -> None:
    suspended = "@msg-id=msg_channel_suspended :tmi.twitch.tv NOTICE #gone :This channel has been suspended."

    async def body(server: FakeIrcServer, pool: IrcPool, got: list[str]) -> None:
        server.silent_join = lambda _i, ch: ch == "gone"
        pool.set_wanted({"live", "gone"})
        await server.wait_for(lambda: pool.confirmed == {"live"} and joins(server.clients[0], "gone") == 1)
        client = server.clients[0]
        assert client.received[0][1] == "CAP REQ :twitch.tv/tags twitch.tv/commands"
        assert client.nick.startswith("justinfan") and client.nick[9:].isdigit()
        assert not client.commands("PASS")
        server.send(client, suspended)
        await server.wait_for(lambda: pool.stats().blocked == 1)
        assert got == [suspended]  # the caller sees the NOTICE too
        assert pool.stats().pending_joins == 0

    run_pool(body, wanted=set(), irc_flavor="twitch", irc_nick="", irc_oauth="")


def test_a_line_past_the_bound_is_discarded_and_the_connection_keeps_logging() -> None:
    async def body(server: FakeIrcServer, pool: IrcPool, got: list[str]) -> None:
        await server.wait_for(lambda: pool.confirmed == {"a"})
        client = server.clients[0]
        server.send(client, ":alice!alice@fake PRIVMSG #a :" + "x" * 100_000)
        assert server.privmsg("a", "after the long one", msgid="m2") == 1
        await server.wait_for(lambda: len(got) == 1)
        assert got[0].endswith("after the long one")
        assert len(server.clients) == 1 and not client.closed  # no reconnect
        (conn,) = pool._conns.values()
        assert conn.lines_too_long == 1

    run_pool(body, wanted={"a"}, irc_max_line_bytes=4096)
