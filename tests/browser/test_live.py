"""Today's page of a channel follows ``/api/live/{channel}``: events produced to the messages topic (as
the ingesters do, two copies each as the two replica groups write them) appear once each, a deleted
message is struck when its CLEARMSG comes, and a user's month shows only that user's new lines. The time
from produce() to the line on screen is printed (run with ``-s``), not asserted."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka import Producer
from playwright.sync_api import Page, expect

from schemas.chat_event import ChatEvent, encode
from tests.browser.chromium import screenshot
from tests.browser.served import Keyspace, Served, event, write_events

pytestmark = pytest.mark.integration

CHANNEL = "livechan"
DAY_MS = 86_400_000


def _now() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def live_site(keyspace: Keyspace, served: Served) -> Iterator[Served]:
    """A line of #livechan stored today (so today is its newest day), and the live route answering."""
    now = _now()
    earlier = max(now - 60_000, now - now % DAY_MS)
    past = event("PRIVMSG", CHANNEL, earlier, login="bob", text="stored before", user_id="42")
    write_events(keyspace.settings, [past])
    with httpx.stream("GET", f"{served.base}/api/live/{CHANNEL}", timeout=30) as answer:
        status = answer.status_code
        body = b"" if status == 200 else answer.read()
    if status == 404:
        pytest.skip(f"GET /api/live/{{channel}} is not served by this build (404: {body[:200]!r})")
    assert status == 200, body
    yield served


class Kafka:
    def __init__(self, keyspace: Keyspace) -> None:
        self.topic = keyspace.settings.topic_messages
        self.producer = Producer({**keyspace.settings.kafka_client_config(), "linger.ms": 0})

    def send(self, *events: ChatEvent) -> float:
        """Produce ``events`` (keyed by channel, as the ingesters do); the monotonic time when sent."""
        for e in events:
            self.producer.produce(self.topic, encode(e), e.channel.encode())
        assert self.producer.flush(30) == 0
        return time.monotonic()


def _appears(page: Page, selector: str, since: float) -> float:
    page.wait_for_selector(selector, timeout=15_000)
    return (time.monotonic() - since) * 1000


def test_todays_page_follows_new_lines_once_each(page: Page, live_site: Served, keyspace: Keyspace) -> None:
    kafka = Kafka(keyspace)
    page.goto(f"{live_site.base}/?channel={CHANNEL}")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    expect(page.locator("#log")).to_have_attribute("data-live", "on")
    expect(page.locator("#status .live")).to_be_visible()
    expect(page.locator("#log .line")).to_have_count(1)

    said = event(
        "PRIVMSG", CHANNEL, _now(), login="carol", text="live Kappa line", user_id="43",
        tags={"emotes": "25:5-9", "color": "#FF69B4"},
    )  # fmt: skip
    start = time.monotonic()
    kafka.send(said)
    first_ms = _appears(page, f'#log .line[data-id="{said.message_id}"]', start)
    kafka.send(said)  # the other replica group's copy
    line = page.locator(f'#log .line[data-id="{said.message_id}"]')
    expect(line.locator("img.emote")).to_have_attribute("alt", "Kappa")
    expect(line).to_contain_text("Carol")

    text, carols = "live Kappa line", said.message_id
    deleted = event("CLEARMSG", CHANNEL, _now(), login="carol", text=text, message_id=carols)
    timeout = event("CLEARCHAT", CHANNEL, _now(), text="carol", user_id="43", tags={"ban-duration": "60"})
    start = time.monotonic()
    kafka.send(deleted, timeout)
    expect(line).to_have_class(re.compile(r"\bdeleted\b"))
    ban_ms = _appears(page, "#log .line.sys.ban", start)
    expect(page.locator("#log .line.sys.ban")).to_contain_text("carol has been timed out for 60 seconds")
    time.sleep(1.5)  # any late copy would be shown by now
    assert page.locator(f'#log .line[data-id="{said.message_id}"]').count() == 1
    texts = page.locator("#log .line").all_inner_texts()
    assert len(texts) == 4 and "stored before" in texts[0]
    screenshot(page, "live")
    print(f"\nlive: produce() -> line on screen {first_ms:.0f} ms; CLEARCHAT -> system line {ban_ms:.0f} ms")


def test_a_users_month_follows_only_their_new_lines(
    page: Page, live_site: Served, keyspace: Keyspace
) -> None:
    kafka = Kafka(keyspace)
    page.goto(f"{live_site.base}/?channel={CHANNEL}&user=bob")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    expect(page.locator("#log")).to_have_attribute("data-live", "on")
    other = event("PRIVMSG", CHANNEL, _now(), login="dave", text="not bob", user_id="44")
    bobs = event("PRIVMSG", CHANNEL, _now() + 1, login="bob", text="bob live", user_id="42")
    start = time.monotonic()
    kafka.send(other, bobs)
    _appears(page, f'#log .line[data-id="{bobs.message_id}"]', start)
    time.sleep(1.0)
    assert page.locator(f'#log .line[data-id="{other.message_id}"]').count() == 0
