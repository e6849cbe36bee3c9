"""Chromium for the browser tests: which binary, a browser context whose emote pictures are answered
locally, and screenshots (``CHATLOG_WEB_SCREENSHOTS``)."""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page, Route

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


def screenshot(page: Page, name: str) -> None:
    """``web_<name>.png`` in ``CHATLOG_WEB_SCREENSHOTS`` when it is set."""
    where = os.environ.get("CHATLOG_WEB_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"web_{name}.png"), full_page=False)
