"""A 100k-line day in the browser: the first screen comes while the rest is still arriving, and the DOM
holds a window of the lines (a few hundred), wherever the reader scrolls.

The time to the first screen (navigation start to the first screenful painted; three loads, the first of
which may be the first page of the server and of the browser) and to the whole day read are printed (run
with ``-s``) and recorded as properties; they are measurements, not assertions (the local stack is shared
and its load varies)."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from core.testing import chat_events
from tests.browser.chromium import screenshot
from tests.browser.served import Keyspace, Served, ms, write_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LINES = 100_000
WINDOW = 1_000
"""Most line nodes the DOM may hold at once (the list keeps about three screens' worth)."""
SAMPLES = 3
CHANNEL = "chan0"  # chat_events' channel when there is one
DAY = "2024-03-05"


@pytest.fixture(scope="module")
def big_day(keyspace: Keyspace, served: Served) -> Iterator[Served]:
    """#chan0 on 2024-03-05: 100k lines 37 ms apart ending at 12:00 UTC (with a timeout every 97 and a
    deleted message every 89), written by store.write."""
    start = time.monotonic()
    events = chat_events(LINES, channels=1, now_ms=ms(2024, 3, 5, 12))
    write_events(keyspace.settings, events)
    print(f"\n100k-line day written in {time.monotonic() - start:.1f} s")
    yield served


def _line_nodes(page: Page) -> int:
    count: int = page.evaluate("document.querySelectorAll('#log .line').length")
    return count


def _frames(page: Page, n: int = 3) -> None:
    page.evaluate(
        f"new Promise(r => {{ let k = {n}; const f = () => --k ? requestAnimationFrame(f) : r(0); f(); }})"
    )


def _shown_times(page: Page) -> list[str]:
    times: list[str] = page.evaluate(
        "[...document.querySelectorAll('#log .line')].filter(n => { const r = n.getBoundingClientRect();"
        " return r.bottom > 0 && r.top < innerHeight; }).map(n => n.querySelector('.ts').textContent)"
    )
    return times


def test_the_first_screen_of_a_100k_line_day(
    page: Page, big_day: Served, record_property: Callable[[str, object], None]
) -> None:
    samples = []
    for _ in range(SAMPLES):  # the first may be the first page the server and the browser show
        page.goto("about:blank")
        page.goto(f"{big_day.base}/?channel={CHANNEL}&date={DAY}", wait_until="commit")
        painted = re.compile(r"^\d+$")
        expect(page.locator("html")).to_have_attribute("data-first-screen-ms", painted, timeout=30_000)
        samples.append(int(page.evaluate("document.documentElement.dataset.firstScreenMs")))
        shown = _shown_times(page)
        assert shown and shown[0] == "10:58:20"  # the day's first line (100k x 37 ms before 12:00)
        assert _line_nodes(page) < WINDOW
    first_ms = statistics.median(samples)
    screenshot(page, "big_day")

    start = time.monotonic()
    expect(page.locator("#log")).to_have_attribute("data-state", "done", timeout=120_000)
    whole_s = time.monotonic() - start + first_ms / 1000
    status = page.locator("#status").inner_text()
    assert f"{LINES:,} lines" in status, status
    assert _line_nodes(page) < WINDOW
    record_property("first_screen_ms", samples)
    record_property("whole_day_s", round(whole_s, 1))
    print(
        f"\n100k-line day: first screen {first_ms:.0f} ms after navigation start (median of {samples} ms); "
        f"all lines read in {whole_s:.1f} s"
    )

    page.evaluate("scrollTo(0, document.documentElement.scrollHeight / 2)")
    _frames(page, 6)
    middle = _shown_times(page)
    assert middle and "11:1" <= middle[0] <= "11:4", middle[:3]  # around the middle of the hour
    assert _line_nodes(page) < WINDOW

    page.keyboard.press("End")
    _frames(page, 12)
    assert _shown_times(page)[-1] == "11:59:59"  # the last line is reachable
    assert _line_nodes(page) < WINDOW
    page.keyboard.press("Home")
    _frames(page, 6)
    assert _shown_times(page)[0] == "10:58:20"
