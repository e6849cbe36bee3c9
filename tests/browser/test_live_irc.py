"""The whole live path in a real browser: a line said on the IRC server (InspIRCd of the local stack) is
read by a real ``chatlog ingest``, produced to the messages topic, and shown by the channel's open page
through ``chatlog serve``'s live route. The time from the PRIVMSG to the line on screen is printed (run
with ``-s``), not asserted."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ingest.registry import Registry
from lab.bench.serve_load import stop_server
from tests.browser.chromium import screenshot
from tests.browser.served import Keyspace, Served, event, write_events

pytestmark = pytest.mark.integration

CHANNEL = "liveirc"
JOIN_WAIT_S = 60.0


class IrcClient:
    """One plain IRC connection to the stack's server that joins a channel and says lines in it."""

    def __init__(self, port: int, channel: str) -> None:
        self.nick = f"said{secrets.token_hex(3)}"
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self._send(f"NICK {self.nick}", f"USER {self.nick} 0 * :{self.nick}")
        self._until(" 001 ")
        self._send(f"JOIN #{channel}")
        self._until(f"JOIN :#{channel}", f"JOIN #{channel}")
        self.channel = channel

    def _send(self, *lines: str) -> None:
        self.sock.sendall("".join(f"{line}\r\n" for line in lines).encode())

    def _until(self, *needles: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\r\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\r\n", 1)
                line = raw.decode(errors="replace")
                if line.startswith("PING"):
                    self._send("PONG" + line[4:])
                if any(n in line for n in needles):
                    return
            self.buffer += self.sock.recv(65536)
        raise AssertionError(f"the IRC server never sent {needles}")

    def say(self, text: str) -> float:
        """PRIVMSG ``text`` to the channel; the monotonic time it was sent."""
        self._send(f"PRIVMSG #{self.channel} :{text}")
        return time.monotonic()

    def close(self) -> None:
        try:
            self._send("QUIT :done")
        finally:
            self.sock.close()


@pytest.fixture(scope="module")
def ingester(keyspace: Keyspace, served: Served) -> Iterator[subprocess.Popen[bytes]]:
    """#liveirc registered, a line of it stored today (its newest day is today's page), and one real
    ``chatlog ingest`` on the keyspace's topics and the stack's IRC server."""
    settings = keyspace.settings
    now = int(time.time() * 1000)
    earlier = max(now - 60_000, now - now % 86_400_000)
    write_events(
        settings,
        [event("PRIVMSG", CHANNEL, earlier, login="bob", text="stored before", user_id="42")],
    )
    Registry(settings).add([CHANNEL])
    worker = f"web{secrets.token_hex(3)}"
    env = {
        **os.environ,
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        **settings.topic_env(),
        "CHATLOG_INGEST_GROUP_PREFIX": f"test-{worker}",
        "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "1",
        "CHATLOG_IRC_HOST": "127.0.0.1",
        "CHATLOG_IRC_PORT": str(settings.irc_port),
        "CHATLOG_IRC_FLAVOR": "ircv3",
        "CHATLOG_METRICS_PORT": "0",
    }
    chatlog = shutil.which("chatlog", path=str(Path(sys.executable).parent)) or "chatlog"
    log_path = keyspace.dir / "ingest-live.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [chatlog, "ingest", "--replica", "0", "--worker-id", worker],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc
        assert proc.poll() is None, f"chatlog ingest exited: {log_path.read_text()[-2000:]}"
    finally:
        stop_server(proc, 30)


def test_a_line_said_on_the_irc_server_appears_on_the_open_page(
    page: Page, served: Served, keyspace: Keyspace, ingester: subprocess.Popen[bytes]
) -> None:
    page.goto(f"{served.base}/?channel={CHANNEL}")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    expect(page.locator("#log")).to_have_attribute("data-live", "on")
    irc = IrcClient(keyspace.settings.irc_port, CHANNEL)
    try:
        # the ingester joins when the consumer group has given it the channel's bucket: until then what
        # is said is not logged (as on Twitch); say a line every second until one shows up
        deadline = time.monotonic() + JOIN_WAIT_S
        n = 0
        while True:
            n += 1
            irc.say(f"warming up {n}")
            try:
                page.wait_for_selector('#log .line:has-text("warming up")', timeout=1000)
                break
            except PlaywrightTimeout:
                assert ingester.poll() is None, "chatlog ingest exited"
                assert time.monotonic() < deadline, (
                    f"nothing said on IRC reached the page in {JOIN_WAIT_S:.0f} s"
                )
        token = secrets.token_hex(4)
        sent = irc.say(f"hello from irc {token}")
        page.wait_for_selector(f'#log .line:has-text("hello from irc {token}")', timeout=15_000)
        shown_ms = (time.monotonic() - sent) * 1000
    finally:
        irc.close()
    line = page.locator("#log .line", has_text=f"hello from irc {token}")
    expect(line).to_have_count(1)
    expect(line).to_contain_text(irc.nick)
    texts = page.locator("#log .line").all_inner_texts()
    assert "stored before" in texts[0]
    screenshot(page, "live_irc")
    print(f"\nlive from IRC: PRIVMSG -> line on screen {shown_ms:.0f} ms")
