"""What ``chatlog simulate --out`` records reads back as it was sent (the demo and the tests rely on it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ingest.irc.testing import FakeIrcServer
from lab.simulator import ChatSimulator, SentMessage, read_sent


def test_sent_messages_round_trip_through_the_out_file(tmp_path: Path) -> None:
    sent = [SentMessage("chan0", "tok-1 ünï", 1_700_000_000_123), SentMessage("chan1", 'a "q"', 0)]
    out = tmp_path / "sent.ndjson"
    out.write_text("".join(m.to_json() + "\n" for m in sent) + "\n")
    assert read_sent(out) == sent


def test_the_clients_register_and_join_every_channel_on_an_irc_server() -> None:
    async def main() -> set[str]:
        async with FakeIrcServer() as server:
            channels = ["#Chan0", "chan1", "chan2"]
            sim = ChatSimulator("127.0.0.1", server.port, channels, rate=10, connections=2)
            await sim.start(timeout=10)
            joined = {ch for client in server.live() for ch in client.joined}
            assert all(client.commands("JOIN") for client in server.live())
            await sim.close()
            return joined

    assert asyncio.run(main()) == {"chan0", "chan1", "chan2"}


def test_a_nick_the_server_refuses_stops_the_start_with_its_line() -> None:
    async def main() -> None:
        async with FakeIrcServer() as server:
            server.nick_taken = lambda _client, _nick: True
            sim = ChatSimulator("127.0.0.1", server.port, ["chan0"], rate=10, connections=1)
            with pytest.raises(ConnectionError, match=r" 433 .*already in use"):
                await sim.start(timeout=10)
            await sim.close()

    asyncio.run(main())
