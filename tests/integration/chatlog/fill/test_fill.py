"""``chatlog fill`` on the real stack: a peer (``chatlog serve``'s app on a real socket, its own keyspace,
holding a day of a channel) fills the ledger's gap of another instance and the time before it first logged
the channel; the gap's lines are then readable there, the ledger shows the time filled from the peer, a
second fill adds nothing, and a peer that is down is one line and fills nothing."""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from chatlog.cli import coverage as coverage_cli
from chatlog.cli import fill as fill_cli
from core.cql import connect
from core.settings import StackSettings
from schemas.chat_event import ChatEvent
from serve.api.app import create_app
from serve.settings import ServeSettings
from tests.integration.chatlog.fill.instance import records, sink_settings, store_records
from tests.integration.serve.events import line_event, write
from tests.integration.serve.server import serving
from tests.uvicorn_thread import free_port, served

pytestmark = pytest.mark.integration

T = calendar.timegm((2026, 11, 20, 10, 0, 0)) * 1000  # a past UTC day: read from Cassandra only
MINUTE = 60_000
GAP = (T + 2 * MINUTE + 30_000, T + 6 * MINUTE + 30_000)
DAY = ["--since", "2026-11-20T00:00:00Z", "--until", "2026-11-20T10:30:00Z"]
"""The day until worker b stopped (after it, the ledger has another gap, one the peer has no lines of)."""


def day_of(channel: str) -> list[ChatEvent]:
    """One line a minute from 10:00 to 10:09: those of 10:03 .. 10:06 fall in :data:`GAP`."""
    return [
        line_event(
            "PRIVMSG",
            channel,
            T + i * MINUTE,
            login="bob",
            user_id="5",
            room_id="77",
            text=f"line {i}",
            message_id=f"{channel}-{i:08d}-0000-0000-000000000000",
        )
        for i in range(10)
    ]


def in_gap(event: ChatEvent) -> bool:
    return GAP[0] <= event.sent_at < GAP[1]


@pytest.fixture
def with_gap(filled_instance: StackSettings, channel: str, tmp_path: Path) -> StackSettings:
    """The instance's ledger: worker a logged the channel until it was lost at :data:`GAP`'s start, worker b
    from its end; and what they logged (the day's lines outside the gap)."""
    settings = filled_instance
    cluster, session = connect(settings)
    try:
        insert = session.prepare(
            f"INSERT INTO {settings.cassandra_keyspace}.coverage_by_channel "
            "(channel, day, at, replica, worker, session, state, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for at, worker, state, reason in [
            (T - 60 * MINUTE, "a", "joined", ""),
            (GAP[0], "a", "left", "lost"),
            (GAP[1], "b", "joined", ""),
            (T + 30 * MINUTE, "b", "left", "stopped"),
        ]:
            session.execute(insert, (channel, at // 86_400_000, at, 0, worker, 1, state, reason))
        session.execute(  # b's last sign of life: the end of the range read, where its span ends
            f"INSERT INTO {settings.cassandra_keyspace}.coverage_sessions "
            "(replica, worker, session, last_seen) VALUES (0, 'b', 1, %s)",
            (T + 30 * MINUTE,),
        )
    finally:
        cluster.shutdown()
    write(sink_settings(settings, tmp_path), [e for e in day_of(channel) if not in_gap(e)])
    return settings


@pytest.fixture
def peer(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory, channel: str) -> Iterator[str]:
    """The peer: its own keyspace with the whole day of the channel, served on a real socket."""
    with serving(stack, tmp_path_factory, day_of(channel)) as server:
        yield server.base


def cli(settings: StackSettings, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> Any:
    """``chatlog ARGS`` (fill or coverage) in process, on the instance's keyspace and topics."""
    monkeypatch.setenv("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", settings.kafka_bootstrap_servers)
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", settings.cassandra_keyspace)
    for key, value in settings.topic_env().items():
        monkeypatch.setenv(key, value)
    app = typer.Typer()
    app.callback()(lambda: None)
    fill_cli.register(app)
    coverage_cli.register(app)
    return CliRunner().invoke(app, args)


def test_a_gap_is_filled_from_a_peer_once(
    with_gap: StackSettings, peer: str, channel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = with_gap
    result = cli(settings, monkeypatch, ["fill", channel, "--from", peer, *DAY])

    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1].startswith(  # 00:00 until worker a joined at 09:00, and the gap
        f"fill #{channel} from {peer}: 2 times not logged here (32640 s) on 1 day, 1 listed by the peer; "
        "asked 1, filled 1 (32640 s), failed 0; lines imported 4, produced 4, left out 3 (3 outside the "
        "time asked); "
    )
    assert len(records(settings)) == 4
    store_records(settings, tmp_path)  # the sink stores what the fill produced (as a backfill run would)

    # the instance now serves the whole day, the gap's lines among them, and shows where it was filled from
    values: dict[str, Any] = {"cassandra_keyspace": settings.cassandra_keyspace, "serve_channels_ttl_s": 0}
    with served(create_app(ServeSettings(**values))) as base:
        day = httpx.get(f"{base}/channel/{channel}/2026/11/20?raw", timeout=60)
        gaps = httpx.get(
            f"{base}/web/gaps", params={"channel": channel, "from": T, "to": T + 10 * MINUTE}, timeout=60
        )
    assert day.status_code == 200, day.text
    assert day.text.splitlines() == [e.raw for e in day_of(channel)]
    assert gaps.json()["gaps"] == [
        {"start": GAP[0], "end": GAP[1], "why": "r0 a: lost", "filled_from": [peer]}
    ]

    shown = cli(settings, monkeypatch, ["coverage", channel, *DAY])
    assert shown.exit_code == 0, shown.output
    assert f"(240.0 s): r0 a: lost; filled from {peer}" in shown.stdout
    assert f"2026-11-20 10:02:30 .. 2026-11-20 10:06:30 from {peer}: 4 lines (filled " in shown.stdout

    again = cli(settings, monkeypatch, ["fill", channel, "--from", peer, *DAY])
    assert again.exit_code == 0, again.output
    assert again.stderr.splitlines() == [f"fill #{channel} from {peer}: nothing left to fill in this range"]
    assert len(records(settings)) == 4


def test_a_peer_that_is_down_is_one_line_and_fills_nothing(
    with_gap: StackSettings, channel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = f"http://127.0.0.1:{free_port()}"

    result = cli(with_gap, monkeypatch, ["fill", channel, "--from", down, *DAY])

    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"chatlog: error: fill #{channel} from {down}: is not reachable: ")
    assert lines[0].endswith("(asked for the days it lists); nothing filled")
    assert records(with_gap) == []
    shown = cli(with_gap, monkeypatch, ["coverage", channel, *DAY])
    assert "filled from" not in shown.stdout and "(240.0 s): r0 a: lost\n" in shown.stdout
