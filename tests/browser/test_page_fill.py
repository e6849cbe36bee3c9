"""The web page shows a gap whose lines were imported from a peer (``chatlog fill``) as filled from it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from chatlog.fill.record import record_fills
from core.coverage_spans import Fill
from core.cql import connect
from tests.browser.chromium import screenshot
from tests.browser.served import Keyspace, Served, event, ms, write_coverage, write_events

PEER = "http://peer.example:8025"


def jan2(hour: int, minute: int = 0) -> int:
    return ms(2024, 1, 2, hour, minute)


@pytest.fixture(scope="module")
def site(keyspace: Keyspace, served: Served) -> Iterator[Served]:
    """#gamma on 2024-01-02: a gap 10:00-10:30 filled from :data:`PEER`, and the line the peer gave."""
    events = [
        event("PRIVMSG", "gamma", jan2(9), login="bob", text="before", user_id="42"),
        event("PRIVMSG", "gamma", jan2(10, 15), login="bob", text="from the peer", user_id="42"),
        event("PRIVMSG", "gamma", jan2(11), login="bob", text="after", user_id="42"),
    ]
    write_events(keyspace.settings, events)
    write_coverage(
        keyspace.settings,
        [
            ("gamma", jan2(0), "joined", ""),
            ("gamma", jan2(10), "left", "lost"),
            ("gamma", jan2(10, 30), "joined", ""),
            ("gamma", ms(2024, 1, 3, 12), "left", "stopped"),
        ],
        last_seen=ms(2024, 1, 3, 12),  # the same worker run as #alpha's (test_page.py), and its last sign
    )
    cluster, session = connect(keyspace.settings)
    try:
        fill = Fill(jan2(10), jan2(10, 30), PEER, ms(2024, 1, 5), lines=1, dropped=0)
        record_fills(session, keyspace.settings.cassandra_keyspace, "gamma", [fill])
    finally:
        cluster.shutdown()
    yield served


def test_a_filled_gap_says_where_its_lines_came_from(page: Page, site: Served) -> None:
    page.goto(f"{site.base}/?channel=gamma&date=2024-01-02")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")

    shown = [" ".join(t.split()) for t in page.locator("#log .line").all_inner_texts()]
    assert shown == [
        "09:00:00 Bob: before",
        f"not logged 10:00:00 to 10:30:00 (30 min): no logger (r0 w1: lost); filled from {PEER}",
        "10:15:00 Bob: from the peer",
        "11:00:00 Bob: after",
    ]
    expect(page.locator("#log .line.gap.filled")).to_have_count(1)
    gaps = site.get(f"/web/gaps?channel=gamma&from={jan2(0)}&to={ms(2024, 1, 3)}").json()
    assert gaps["gaps"] == [
        {"start": jan2(10), "end": jan2(10, 30), "why": "r0 w1: lost", "filled_from": [PEER]}
    ]
    screenshot(page, "filled_gap")
