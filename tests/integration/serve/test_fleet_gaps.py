"""`chatlog status` reports the last hour's gaps per replica group from the ledger, on the real stack:
coverage events -> chatlog.coverage -> the ledger writer -> Cassandra -> the status command."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
import typer
from confluent_kafka import Producer
from typer.testing import CliRunner

from core.settings import StackSettings
from ingest.registry import Registry
from schemas.coverage import CoverageEvent, State, encode
from sink.side.ledger import LedgerWriter

pytestmark = pytest.mark.integration

MIN_MS = 60_000


def _app() -> typer.Typer:
    import chatlog.cli.ingest

    app = typer.Typer()
    app.callback()(lambda: None)
    chatlog.cli.ingest.register(app)
    return app


def _env(settings: StackSettings) -> dict[str, str]:
    return {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        **settings.topic_env(),
        "CHATLOG_CASSANDRA_KEYSPACE": settings.cassandra_keyspace,
    }


def _write_ledger(settings: StackSettings, events: list[CoverageEvent], group: str) -> None:
    producer = Producer(settings.kafka_client_config())
    for e in events:
        producer.produce(settings.topic_coverage, encode(e), e.key.encode())
    assert producer.flush(30) == 0
    ledger = LedgerWriter(settings, settings, group=group)
    try:
        deadline = time.monotonic() + 60
        while ledger.written < sum(e.state != "alive" for e in events):
            assert time.monotonic() < deadline, f"the ledger wrote {ledger.written} events"
            ledger.step(1.0)
        assert ledger.undecodable == 0
    finally:
        ledger.close()


def _groups(doc: dict[str, Any]) -> dict[str, dict[str, float]]:
    """replica label -> channel -> uncovered seconds."""
    return {g["replica"]: {c["channel"]: c["seconds"] for c in g["channels"]} for g in doc["gaps"]["groups"]}


def test_status_reports_each_groups_gaps_of_the_last_hour(
    fresh_topics: StackSettings, fresh_keyspace: StackSettings, unique: str
) -> None:
    settings = fresh_topics.model_copy(update={"cassandra_keyspace": fresh_keyspace.cassandra_keyspace})
    ch = [f"g{unique}_{i}" for i in range(6)]
    Registry(settings).add(ch)
    now = int(time.time() * 1000)
    a, b, k, x = (now - 3 * 3_600_000, "a"), (now - 35 * MIN_MS, "b"), (now - 2 * 3_600_000, "k"), (0, "x")

    def ev(who: tuple[int, str], state: State, at: int, channel: str = "", reason: str = "") -> CoverageEvent:
        replica = 1 if who[1] == "x" else 0
        return CoverageEvent(
            replica=replica, worker=who[1], session=who[0], state=state, at=at, channel=channel, reason=reason
        )

    two_h = now - 2 * 3_600_000
    events = [
        # ch0: r0 lost it 20 min ago and b took it over 5 min later; r1 covered it throughout
        ev(a, "joined", two_h, ch[0]),
        ev(a, "left", now - 20 * MIN_MS, ch[0], "lost"),
        ev(b, "joined", now - 15 * MIN_MS, ch[0]),
        ev(x, "joined", two_h, ch[0]),
        # ch1: both groups throughout
        ev(a, "joined", two_h, ch[1]),
        ev(x, "joined", two_h, ch[1]),
        # ch2: r0 only: r1 never joined it (uncovered by r1 all hour, no gap for a reader)
        ev(a, "joined", two_h, ch[2]),
        # ch3: both groups stopped logging it 3 hours ago... within the look-back: a gap all hour
        ev(a, "joined", now - 5 * 3_600_000 + 1, ch[3]),
        ev(a, "left", now - 3 * 3_600_000, ch[3], "stopped"),
        ev(x, "joined", now - 5 * 3_600_000 + 1, ch[3]),
        ev(x, "left", now - 3 * 3_600_000, ch[3], "stopped"),
        # ch4: r0's worker k was killed (last sign of life 40 min ago); b joined 10 min later
        ev(k, "joined", two_h, ch[4]),
        ev(k, "alive", now - 40 * MIN_MS),
        ev(b, "joined", now - 30 * MIN_MS, ch[4]),
        ev(x, "joined", two_h, ch[4]),
        # ch5: nothing in the ledger (registered, never logged): not in a gap
        ev(a, "alive", now),
        ev(b, "alive", now),
        ev(x, "alive", now),
    ]
    _write_ledger(settings, events, group=f"ledger-{unique}")

    runner = CliRunner()
    result = runner.invoke(_app(), ["status", "--json", "--replicas", "2"], env=_env(settings))
    assert result.exit_code == 1, result.output  # no heartbeats: every channel is uncovered right now
    doc = json.loads(result.stdout)
    got = _groups(doc)
    assert set(got) == {"0", "1", "all"}
    assert got["0"] == pytest.approx({ch[0]: 300, ch[3]: 3600, ch[4]: 600}, abs=1)
    assert got["1"] == pytest.approx({ch[2]: 3600, ch[3]: 3600}, abs=1)
    assert got["all"] == pytest.approx({ch[3]: 3600}, abs=1)
    zero = next(g for g in doc["gaps"]["groups"] if g["replica"] == "0")
    assert zero["channels_with_gap"] == 3
    assert zero["uncovered_channel_seconds"] == pytest.approx(4500, abs=3)
    by_channel = {c["channel"]: c["gaps"] for c in zero["channels"]}
    assert [g["why"] for g in by_channel[ch[4]]] == ["r0 k: silent"]
    assert by_channel[ch[4]][0]["start"] == now - 40 * MIN_MS
    assert [g["why"] for g in by_channel[ch[0]]] == ["r0 a: lost"]
    assert doc["gaps"]["channels"] == 6

    text = runner.invoke(_app(), ["status", "--replicas", "2"], env=_env(settings))
    lines = text.stdout.splitlines()
    section = lines[lines.index(next(ln for ln in lines if ln.startswith("gaps in the last hour"))) :]
    assert "6 channel(s)" in section[0]
    assert section[1].startswith("  replica 0: 3 channel(s) with a gap, 4500 uncovered channel-seconds: ")
    assert f"{ch[3]} 3600 s (r0 a: stopped)" in section[1]
    assert section[2].startswith("  replica 1: 2 channel(s) with a gap, 7200 uncovered channel-seconds")
    assert section[3].startswith("  all replicas: 1 channel(s) with a gap, 3600 uncovered channel-seconds")

    skipped = runner.invoke(_app(), ["status", "--json", "--no-gaps"], env=_env(settings))
    assert "gaps" not in json.loads(skipped.stdout)


def test_status_without_a_ledger_says_so_and_cassandra_down_is_one_line(fresh_topics: StackSettings) -> None:
    env = {**_env(fresh_topics), "CHATLOG_CASSANDRA_KEYSPACE": "no_such_keyspace_here"}
    result = CliRunner().invoke(_app(), ["status", "--json"], env=env)
    doc = json.loads(result.stdout)
    assert doc["gaps"] is None and "has no coverage ledger" in doc["gaps_note"]
    text = CliRunner().invoke(_app(), ["status"], env=env)
    assert text.stdout.splitlines()[-1].startswith(
        "gaps: keyspace no_such_keyspace_here has no coverage ledger"
    )

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = subprocess.run(
        [sys.executable, "-m", "chatlog", "status"],
        env={**os.environ, **_env(fresh_topics), "CHATLOG_CASSANDRA_PORT": str(port)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert down.returncode == 2, down
    assert down.stdout == ""
    (line,) = down.stderr.strip().splitlines()
    assert line.startswith(f"chatlog: error: Cassandra at 127.0.0.1:{port} is not reachable "), line
