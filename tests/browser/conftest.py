"""Fixtures of the browser tests: ``chatlog serve`` (the real command, on a free port) over a fresh
keyspace filled by store.write with events made of real Twitch lines, and Debian's chromium
driven headless by Playwright (``executable_path``; Playwright downloads no browser).

``CHATLOG_TEST_CHROMIUM`` names another chromium binary; ``CHATLOG_WEB_SCREENSHOTS`` a directory where the
tests leave a screenshot of each page (``web_*.png``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from core.settings import StackSettings
from lab.bench.scratch import drop_keyspaces
from lab.bench.serve_load import stop_server
from store.schema import apply_schema
from tests.browser.chromium import CHROMIUM, new_context
from tests.browser.served import Keyspace, Served
from tests.uvicorn_thread import free_port


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
    drop_keyspaces(settings, [settings.cassandra_keyspace])
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
        stop_server(proc, 20)


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
