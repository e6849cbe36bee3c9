"""``chatlog fill`` (the command, in a process of its own) of a channel never logged here, from a justlog or
rustlog peer in a process of its own (:mod:`tests.integration.chatlog.fill.peer_process`: their exact
``/list`` and day shapes): a month filled, every line stored once, the ledger showing each day filled from
the peer; a peer that asks to wait is waited for; a peer killed midway and started again within the
patience is asked again and the fill completes; one gone longer stops the fill (exit 4), and the next fill
asks only the days not filled yet."""

from __future__ import annotations

import calendar
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from core.cql import connect
from core.settings import StackSettings
from serve.api.app import create_app
from serve.settings import ServeSettings
from store.scan import stored_ids
from tests.integration.chatlog.fill.instance import records, store_records
from tests.uvicorn_thread import free_port, served

pytestmark = pytest.mark.integration

OCT_1 = calendar.timegm((2026, 10, 1, 0, 0, 0)) * 1000
DAY = 86_400_000
ROOM = "4242"
REPO = Path(__file__).resolve().parents[4]


def month_of(channel: str, days: int, per_day: int) -> list[str]:
    """``per_day`` PRIVMSG lines of ``channel`` on each of ``days`` days from Oct 1, with Twitch ids."""
    out = []
    for d in range(days):
        for i in range(per_day):
            at = OCT_1 + d * DAY + 3_600_000 + i * 60_000
            out.append(
                f"@badges=;color=;display-name=Bob;id={uuid.uuid4()};mod=0;room-id={ROOM};subscriber=0;"
                f"tmi-sent-ts={at};turbo=0;user-id=5;user-type= :bob!bob@bob.tmi.twitch.tv PRIVMSG "
                f"#{channel} :day {d + 1} line {i}"
            )
    return out


@dataclass
class Peer:
    """The peer process: started (again) on one port, its requests in :attr:`log`."""

    args: list[str]
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.chatlog.fill.peer_process", "--port", str(self.port),
             "--log", str(self.log), *self.args],
            cwd=REPO,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.base + "/list?channel=-", timeout=2)
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline and self.process.poll() is None, "the peer did not start"
                time.sleep(0.1)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def served(self, status: int = 200) -> list[str]:
        """The paths answered with ``status``, in order (``/list`` asks left out)."""
        text = self.log.read_text() if self.log.exists() else ""
        return [
            p for s, p in (ln.split(" ", 1) for ln in text.splitlines()) if int(s) == status and p != "/list"
        ]

    def wait_served(self, count: int, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.served()) < count:
            assert time.monotonic() < deadline, f"the peer served {len(self.served())} of {count} days"
            time.sleep(0.05)


@pytest.fixture
def peer_of(tmp_path: Path) -> Iterator[list[Peer]]:
    started: list[Peer] = []
    yield started
    for peer in started:
        if peer.process is not None and peer.process.poll() is None:
            peer.kill()


def new_peer(started: list[Peer], tmp_path: Path, lines: list[str], *args: str) -> Peer:
    path = tmp_path / f"peer-{len(started)}.txt"
    path.write_text("\n".join(lines) + "\n")
    peer = Peer(["--lines", str(path), *args], free_port(), tmp_path / f"peer-{len(started)}.log")
    started.append(peer)
    peer.start()
    return peer


def fill(settings: StackSettings, *args: str) -> subprocess.Popen[str]:
    """``chatlog fill ARGS`` in a process of its own, on the instance's keyspace and topics."""
    env = {
        **os.environ,
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "CHATLOG_CASSANDRA_KEYSPACE": settings.cassandra_keyspace,
        **settings.topic_env(),
    }
    command = [sys.executable, "-m", "chatlog", "fill", *args]
    return subprocess.Popen(command, env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen[str], timeout_s: float = 300.0) -> tuple[int, list[str]]:
    _out, err = process.communicate(timeout=timeout_s)
    return process.returncode, err.splitlines()


def stored_once(settings: StackSettings, tmp_path: Path, lines: list[str]) -> None:
    """The topic's records stored as the sink stores them: each of ``lines``' ids once in each copy."""
    store_records(settings, tmp_path)
    cluster, session = connect(settings)
    try:
        for copy in ("channel", "user"):
            ids = stored_ids(session, settings.cassandra_keyspace, copy)
            wanted = sorted(line.split(";id=", 1)[1].split(";", 1)[0] for line in lines)
            assert sorted(ids) == wanted, f"{copy} copy: {len(ids)} stored of {len(wanted)}"
    finally:
        cluster.shutdown()


def test_a_month_of_a_channel_never_logged_here_from_a_justlog_that_goes_away_and_comes_back(
    filled_instance: StackSettings, channel: str, peer_of: list[Peer], tmp_path: Path
) -> None:
    settings = filled_instance
    lines = month_of(channel, 31, 20)
    peer = new_peer(
        peer_of, tmp_path, lines, "--channel", channel, "--delay-s", "0.2", "--wait-once",
        f"/channel/{channel}/2026/10/3",
    )  # fmt: skip
    month = ["--since", "2026-10-01T00:00:00Z", "--until", "2026-11-01T00:00:00Z"]

    running = fill(settings, channel, "--from", peer.base, *month, "--patience", "60")
    peer.wait_served(10)
    peer.kill()  # gone for 3 s, in the middle of the month
    time.sleep(3)
    peer.start()
    code, err = finished(running)

    assert code == 0, err
    assert err[-1].startswith(
        f"fill #{channel} from {peer.base}: 1 time not logged here (2678400 s) on 31 days, 31 listed by the "
        "peer; asked 31, filled 31 (2678400 s), failed 0; lines imported 620, produced "
    ), err
    assert "; waited for the peer 1 time" in err[-1]
    assert peer.served(429) == [f"/channel/{channel}/2026/10/3"]
    assert sorted(set(peer.served())) == sorted(f"/channel/{channel}/2026/10/{d}" for d in range(1, 32))
    stored_once(settings, tmp_path, lines)

    values = {"cassandra_keyspace": settings.cassandra_keyspace, "serve_channels_ttl_s": 0}
    with served(create_app(ServeSettings(**values))) as base:  # type: ignore[arg-type]
        gaps = httpx.get(
            f"{base}/web/gaps", params={"channel": channel, "from": OCT_1, "to": OCT_1 + 31 * DAY}, timeout=60
        ).json()["gaps"]
        day = httpx.get(f"{base}/channel/{channel}/2026/10/17?raw", timeout=60)
    assert gaps == [{"start": OCT_1, "end": OCT_1 + 31 * DAY, "why": "no logger", "filled_from": [peer.base]}]
    assert day.text.splitlines() == lines[16 * 20 : 17 * 20]

    before = len(records(settings))
    code, err = finished(fill(settings, channel, "--from", peer.base, *month))
    assert (code, err) == (0, [f"fill #{channel} from {peer.base}: nothing left to fill in this range"])
    assert len(records(settings)) == before


def test_a_rustlog_gone_too_long_stops_the_fill_and_the_next_asks_only_the_rest(
    filled_instance: StackSettings, channel: str, peer_of: list[Peer], tmp_path: Path
) -> None:
    settings = filled_instance
    lines = month_of(channel, 6, 30)
    peer = new_peer(
        peer_of, tmp_path, lines, "--channel", channel, "--flavour", "rustlog", "--delay-s", "0.3"
    )
    by_id = ["--channel-id", ROOM, "--all", "--patience", "2"]

    running = fill(settings, channel, "--from", peer.base, *by_id)
    peer.wait_served(2)
    peer.kill()
    code, err = finished(running)

    assert code == 4, err
    done = peer.served()
    assert 2 <= len(done) < 6
    assert err[0].startswith(f"fill #{channel} from {peer.base}: stopped asking: the peer is not reachable: ")
    assert err[0].endswith("(away for 2 s)")

    peer.log.unlink()
    peer.start()
    code, err = finished(fill(settings, channel, "--from", peer.base, *by_id))

    assert code == 0, err
    again = peer.served()
    assert again and not set(again) & set(done), (done, again)  # only what was not filled yet
    stored_once(settings, tmp_path, lines)
