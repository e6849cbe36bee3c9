"""Fixtures of the browser tests: ``chatlog serve`` (the real command, on a free port) over a fresh
keyspace that the sink's executor filled with events made of real Twitch lines, and Debian's chromium
driven headless by Playwright (``executable_path``; Playwright downloads no browser).

``CHATLOG_TEST_CHROMIUM`` names another chromium binary; ``CHATLOG_WEB_SCREENSHOTS`` a directory where the
tests leave a screenshot of each page (``web_*.png``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Route, sync_playwright

from core.cql import apply_schema, connect
from core.settings import StackSettings
from core.testing import twitch_event
from schemas.chat_event import ChatEvent, encode
from sink.executor.cassandra import close_sessions
from sink.executor.partition import NameCache, write_partition
from sink.settings import SinkSettings
from tests.uvicorn_thread import free_port

CHROMIUM = os.environ.get("CHATLOG_TEST_CHROMIUM", "/usr/bin/chromium")
EMOTE_CDN = "https://static-cdn.jtvnw.net/**"


def _png(size: int, rgb: tuple[int, int, int]) -> bytes:
    """A square PNG of one colour with a lighter border: what the tests answer for an emote's picture."""
    rows = b""
    for y in range(size):
        edge = y in (0, size - 1)
        row = b"".join(
            bytes(c + (255 - c) // 2 for c in rgb) if edge or x in (0, size - 1) else bytes(rgb)
            for x in range(size)
        )
        rows += b"\x00" + row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


EMOTE_PNG = _png(28, (100, 65, 165))


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


def event(
    kind: str,
    channel: str,
    at: int,
    *,
    login: str | None = None,
    text: str | None = None,
    message_id: str | None = None,
    tags: dict[str, str] | None = None,
    user_id: str | None = None,
) -> ChatEvent:
    """The event an ingester makes of the Twitch line (:func:`core.testing.twitch_line`) sent at ``at``."""
    extra = dict(tags or {})
    display = extra.pop("display-name", None) if kind == "PRIVMSG" else None
    if display is None and login is not None and kind == "PRIVMSG":
        display = login.capitalize()
    if kind == "PRIVMSG" and message_id is None:
        message_id = str(uuid.uuid4())
    return twitch_event(
        kind,
        channel,
        sent_at=at,
        login=login,
        text=text,
        user_id=user_id,
        room_id=str(1000 + zlib.crc32(channel.encode()) % 1_000_000),  # a channel's own Twitch id
        message_id=message_id,
        display_name=display,
        extra=extra,
    )


def write_events(settings: StackSettings, events: list[ChatEvent], checkpoint: Path) -> None:
    """``events`` into the settings' keyspace through the sink's executor (its production writer)."""
    values: dict[str, Any] = {"cassandra_keyspace": settings.cassandra_keyspace, "sink_metrics_port": 0}
    sink = SinkSettings(**values, sink_checkpoint=str(checkpoint))
    stats = write_partition(((encode(e), None, None) for e in events), sink, name_cache=NameCache())
    close_sessions()
    assert (stats.events, stats.deadletters) == (len(events), 0)


def write_coverage(settings: StackSettings, rows: list[tuple[str, int, str, str]], last_seen: int) -> None:
    """Coverage ledger rows ``(channel, at, state, reason)`` of one worker run (replica 0, worker ``w1``)
    and its last sign of life, as the ledger writer (:mod:`sink.driver.ledger`) stores them."""
    cluster, session = connect(settings)
    ks = settings.cassandra_keyspace
    try:
        insert = session.prepare(
            f"INSERT INTO {ks}.coverage_by_channel "
            "(channel, day, at, replica, worker, session, state, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for channel, at, state, reason in rows:
            session.execute(insert, (channel, at // 86_400_000, at, 0, "w1", 1, state, reason))
        seen = (
            f"UPDATE {ks}.coverage_sessions SET last_seen = %s "
            "WHERE replica = %s AND worker = %s AND session = %s"
        )
        session.execute(seen, (last_seen, 0, "w1", 1))
    finally:
        cluster.shutdown()


@dataclass
class Served:
    """A running ``chatlog serve`` and the keyspace it reads."""

    base: str
    settings: StackSettings

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.base + path, timeout=60)


@dataclass
class Keyspace:
    settings: StackSettings
    dir: Path


@pytest.fixture(scope="package")
def keyspace(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyspace]:
    """A fresh keyspace (schema applied) and fresh topics (the live route reads their messages topic)
    for the browser tests, dropped at the end."""
    from core.kafka_admin import admin_client, ensure_topics

    unique = uuid.uuid4().hex[:10]
    settings = stack.with_topics(f"web{unique}", channel_buckets=16, messages_partitions=2)
    settings = settings.model_copy(update={"cassandra_keyspace": f"web{unique}"})
    apply_schema(settings)
    ensure_topics(settings)
    yield Keyspace(settings, tmp_path_factory.mktemp("web"))
    cluster, session = connect(settings)
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {settings.cassandra_keyspace}", timeout=60)
    finally:
        cluster.shutdown()
    admin = admin_client(settings)  # kept alive until its futures resolve
    for done in admin.delete_topics(settings.topic_names(), operation_timeout=30).values():
        with contextlib.suppress(Exception):
            done.result(timeout=60)


@pytest.fixture(scope="package")
def served(keyspace: Keyspace) -> Iterator[Served]:
    """``chatlog serve`` on a free port over the keyspace (a process of its own, stopped at the end)."""
    settings = keyspace.settings
    port = free_port()
    env = {
        **os.environ,
        "CHATLOG_CASSANDRA_KEYSPACE": settings.cassandra_keyspace,
        "CHATLOG_SERVE_CHANNELS_TTL_S": "0",
        "CHATLOG_SERVE_LOG_LEVEL": "warning",
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        **settings.topic_env(),
    }
    chatlog = shutil.which("chatlog", path=str(Path(sys.executable).parent)) or "chatlog"
    log_path = keyspace.dir / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [chatlog, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"chatlog serve exited: {log_path.read_text()[-2000:]}"
            assert time.monotonic() < deadline, (
                f"chatlog serve did not answer: {log_path.read_text()[-2000:]}"
            )
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield Served(base, settings)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Package-scoped, not session-scoped: Playwright's sync API keeps an event loop running in the main
    thread while it lives, and tests after this package call ``asyncio.run`` (``chatlog logs``)."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no chromium at {CHROMIUM}: `make setup` installs Debian's (apt-get install chromium), or set "
            "CHATLOG_TEST_CHROMIUM",
            pytrace=False,
        )
    launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
    yield launched
    launched.close()


def emotes_served(route: Route) -> None:
    route.fulfill(status=200, content_type="image/png", body=EMOTE_PNG)


@contextmanager
def new_context(browser: Browser, **options: Any) -> Iterator[BrowserContext]:
    """A browser context (light theme, 1280x800 unless told) whose requests for emote pictures are
    answered locally."""
    options = {"viewport": {"width": 1280, "height": 800}, "color_scheme": "light", **options}
    ctx = browser.new_context(**options)
    ctx.set_default_timeout(20_000)
    ctx.route(EMOTE_CDN, emotes_served)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    with new_context(browser) as ctx:
        yield ctx


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    """A page of the context; the test fails if the page's script threw."""
    errors: list[str] = []
    opened = context.new_page()
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    assert not errors, f"the page's script failed: {errors}"


def screenshot(page: Page, name: str) -> None:
    """``web_<name>.png`` in ``CHATLOG_WEB_SCREENSHOTS`` when it is set."""
    where = os.environ.get("CHATLOG_WEB_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"web_{name}.png"), full_page=False)
