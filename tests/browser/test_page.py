"""The web page of ``chatlog serve`` in Debian's chromium: each deep link shows what a person expects,
from events store.write stored (real Twitch lines) and a coverage ledger with a gap."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.chromium import EMOTE_CDN, new_context, screenshot
from tests.browser.served import Keyspace, Served, event, ms, write_coverage, write_events

pytestmark = pytest.mark.integration

IDS = {"bob": "42", "carol": "43", "dave": "44"}
DELETED = str(uuid.uuid4())
HELLO = str(uuid.uuid4())
XSS = '<img src=x onerror="document.title=1"> & <b>bold</b>'


def jan2(hour: int, minute: int = 0, second: int = 0) -> int:
    return ms(2024, 1, 2, hour, minute, second)


@pytest.fixture(scope="module")
def site(keyspace: Keyspace, served: Served) -> Iterator[Served]:
    """#alpha: a day (2024-01-02) with emotes, a /me, a deleted message, a timeout, a sub, HTML-like text
    and a gap in coverage (10:00-10:30), the next day, a line in February; #beta: one line."""
    events = [
        event("PRIVMSG", "alpha", jan2(0, 0, 1), login="bob", text="hello Kappa world", user_id="42",
              message_id=HELLO, tags={"color": "#1E90FF", "emotes": "25:6-10"}),
        event("PRIVMSG", "alpha", jan2(0, 1), login="carol", text="\U0001f600 Kappa and LUL", user_id="43",
              tags={"color": "#FF69B4", "emotes": "25:2-6/425618:12-14"}),
        event("PRIVMSG", "alpha", jan2(1), login="bob", text="\x01ACTION dances\x01", user_id="42",
              tags={"color": "#1E90FF"}),
        event("PRIVMSG", "alpha", jan2(2), login="carol", text="this will be deleted", user_id="43",
              message_id=DELETED),
        event("CLEARMSG", "alpha", jan2(2, 0, 5), login="carol", text="this will be deleted",
              message_id=DELETED),
        event("CLEARCHAT", "alpha", jan2(3), text="bob", user_id="42", tags={"ban-duration": "600"}),
        event("PRIVMSG", "alpha", jan2(4), login="dave", text=XSS, user_id="44"),
        event("USERNOTICE", "alpha", jan2(5), text="great stream", message_id=str(uuid.uuid4()),
              tags={"display-name": "Carol", "login": "carol", "msg-id": "sub", "user-id": "43",
                    "system-msg": "Carol subscribed at Tier 1."}),
        event("PRIVMSG", "alpha", jan2(9), login="bob", text="the NEEDLE is here", user_id="42"),
        event("PRIVMSG", "alpha", jan2(11), login="carol", text="after the gap", user_id="43"),
        event("PRIVMSG", "alpha", jan2(23, 59, 59), login="bob", text="good night", user_id="42"),
        event("PRIVMSG", "alpha", ms(2024, 1, 3, 0, 10), login="bob", text="next day line", user_id="42"),
        event("PRIVMSG", "alpha", ms(2024, 2, 3, 0, 0, 5), login="bob", text="february", user_id="42"),
        event("PRIVMSG", "beta", ms(2024, 2, 3), login="dave", text="beta line", user_id="44"),
    ]  # fmt: skip
    write_events(keyspace.settings, events)
    write_coverage(
        keyspace.settings,
        [
            ("alpha", ms(2024, 1, 1, 20), "joined", ""),
            ("alpha", jan2(10), "left", "lost"),
            ("alpha", jan2(10, 30), "joined", ""),
            ("alpha", ms(2024, 1, 3, 12), "left", "stopped"),
        ],
        last_seen=ms(2024, 1, 3, 12),
    )
    yield served


def lines(page: Page) -> list[str]:
    return [" ".join(t.split()) for t in page.locator("#log .line").all_inner_texts()]


def open_day(page: Page, site: Served, date: str = "2024-01-02", channel: str = "alpha") -> None:
    page.goto(f"{site.base}/?channel={channel}&date={date}")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")


def test_picker_lists_the_channels_and_opens_a_channels_newest_day(page: Page, site: Served) -> None:
    page.goto(site.base + "/")
    names = sorted(c["name"] for c in site.get("/channels").json()["channels"])
    assert {"alpha", "beta"} <= set(names)
    expect(page.locator("#channels a")).to_have_text([f"#{n}" for n in names])
    options = page.locator("#channel option").all_inner_texts()
    assert options[1:] == [f"#{n}" for n in names]
    screenshot(page, "picker")
    page.locator("#channels a", has_text="#alpha").click()
    expect(page).to_have_url(re.compile(r"/\?channel=alpha$"))
    expect(page.locator("#log .line")).to_have_count(1)
    assert "february" in lines(page)[0]
    expect(page.locator("#date")).to_have_value("2024-02-03")
    page.locator("#channel").select_option("beta")
    expect(page.locator("#log .line")).to_have_text([re.compile(r"00:00:00\s*Dave: beta line")])


def test_day_deep_link_shows_its_lines_in_order_with_the_gap_where_it_falls(page: Page, site: Served) -> None:
    open_day(page, site)
    shown = lines(page)
    assert shown == [
        "00:00:01 Bob: hello world",  # the emote is a picture (its text is its alt)
        "00:01:00 Carol: \U0001f600 and",
        "01:00:00 Bob dances",
        "02:00:00 Carol: this will be deleted",
        "02:00:05 carol's message was deleted: this will be deleted",
        "03:00:00 bob has been timed out for 600 seconds",
        f"04:00:00 Dave: {XSS}",
        "05:00:00 Carol subscribed at Tier 1. Carol: great stream",
        "09:00:00 Bob: the NEEDLE is here",
        "not logged 10:00:00 to 10:30:00 (30 min): no logger (r0 w1: lost)",
        "11:00:00 Carol: after the gap",
        "23:59:59 Bob: good night",
    ]
    assert page.title() == "#alpha 2024-01-02 · chatlog"
    bob = page.locator("#log .line").first.locator(".name")
    expect(bob).to_have_css("color", "rgb(30, 144, 255)")  # the color tag, readable on white as it is
    expect(bob).to_have_attribute("href", "/?channel=alpha&user=bob")
    status = page.locator("#status").inner_text()
    assert "11 lines" in status and "1 gap in coverage" in status
    fetched = "performance.getEntriesByType('resource').filter(e => e.name.includes('?web')).length"
    assert page.evaluate(fetched) == 1  # the lines the page's Link header preloads are read once
    screenshot(page, "day")


def test_emotes_are_pictures_from_their_ids_with_their_text_as_alt(page: Page, site: Served) -> None:
    open_day(page, site)
    first, second = page.locator("#log .line").nth(0), page.locator("#log .line").nth(1)
    kappa = first.locator("img.emote")
    expect(kappa).to_have_count(1)
    expect(kappa).to_have_attribute("alt", "Kappa")
    expect(kappa).to_have_attribute("src", "https://static-cdn.jtvnw.net/emoticons/v2/25/default/dark/1.0")
    assert first.locator(".text").evaluate("n => n.textContent") == "hello  world"
    # positions count code points: the emoji before them is one
    assert second.locator("img.emote").evaluate_all("ns => ns.map(n => n.alt)") == ["Kappa", "LUL"]
    assert second.locator("img.emote").nth(1).get_attribute("src") == (
        "https://static-cdn.jtvnw.net/emoticons/v2/425618/default/dark/1.0"
    )
    assert page.evaluate("document.querySelector('#log img.emote').naturalWidth") == 28  # it loaded


def test_offline_an_emote_shows_its_text(browser: Browser, site: Served) -> None:
    with new_context(browser) as context:
        context.unroute(EMOTE_CDN)
        context.route(EMOTE_CDN, lambda route: route.abort("internetdisconnected"))
        page = context.new_page()
        open_day(page, site)
        first = page.locator("#log .line").first
        expect(first.locator(".emote-text")).to_have_text("Kappa")
        expect(first.locator(".emote-text")).to_have_attribute("data-emote-id", "25")
        assert first.locator("img").count() == 0
        assert " ".join(first.inner_text().split()) == "00:00:01 Bob: hello Kappa world"


def test_me_is_italic_a_deleted_message_struck_a_timeout_a_system_line(page: Page, site: Served) -> None:
    open_day(page, site)
    action = page.locator("#log .line.action")
    expect(action).to_have_count(1)
    expect(action.locator(".text")).to_have_css("font-style", "italic")
    expect(action.locator(".text")).to_have_text("dances")
    deleted = page.locator(f'#log .line[data-id="{DELETED}"]')
    expect(deleted).to_have_class(re.compile(r"\bdeleted\b"))
    assert "line-through" in deleted.locator(".text").evaluate("n => getComputedStyle(n).textDecorationLine")
    assert page.locator("#log .line.deleted").count() == 1
    ban = page.locator("#log .line.sys.ban")
    expect(ban).to_have_count(1)
    expect(ban).to_contain_text("bob has been timed out for 600 seconds")
    assert ban.locator(".name").count() == 0
    assert page.locator(f'#log .line[data-id="{HELLO}"]').get_attribute("class") == "line"


def test_chat_text_is_text_never_markup(page: Page, site: Served) -> None:
    open_day(page, site)
    line = page.locator("#log .line", has_text="bold")
    expect(line.locator(".text")).to_have_text(XSS)
    assert line.locator("img, b").count() == 0
    assert page.title() != "1"


def test_user_deep_link_shows_the_newest_month_and_moves_between_months(page: Page, site: Served) -> None:
    page.goto(f"{site.base}/?channel=alpha&user=bob")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    expect(page.locator("#month")).to_have_value("2024-02")
    assert [t for t in lines(page) if not t.startswith("not logged")] == ["2024-02-03 00:00:05 Bob: february"]
    expect(page.locator("#next")).to_have_attribute("aria-disabled", "true")
    # the arrows are set from the month list, which may come after the lines: keys act once it has
    expect(page.locator("#prev")).to_have_attribute("href", re.compile(r"month=2024-01$"))
    page.keyboard.press("k")
    expect(page).to_have_url(re.compile(r"\?channel=alpha&user=bob&month=2024-01$"))
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    shown = [t for t in lines(page) if not t.startswith("not logged")]
    assert shown == [
        "2024-01-02 00:00:01 Bob: hello world",
        "2024-01-02 01:00:00 Bob dances",
        "2024-01-02 03:00:00 bob has been timed out for 600 seconds",
        "2024-01-02 09:00:00 Bob: the NEEDLE is here",
        "2024-01-02 23:59:59 Bob: good night",
        "2024-01-03 00:10:00 Bob: next day line",
    ]
    assert lines(page)[4:] == [
        "not logged 2024-01-02 10:00:00 to 2024-01-02 10:30:00 (30 min): no logger (r0 w1: lost)",
        "2024-01-02 23:59:59 Bob: good night",
        "2024-01-03 00:10:00 Bob: next day line",
        "not logged 2024-01-03 12:00:00 to 2024-02-01 00:00:00 (28 d 12 h): no logger (r0 w1: stopped)",
    ]
    screenshot(page, "user")
    page.locator("#log .line", has_text="next day line").locator("a.ts").click()
    expect(page).to_have_url(re.compile(r"\?channel=alpha&date=2024-01-03$"))
    expect(page.locator("#log .line").first).to_contain_text("next day line")


def test_search_deep_link_highlights_the_hits(page: Page, site: Served) -> None:
    page.goto(f"{site.base}/?channel=alpha&q=needle&date=2024-01-02")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    assert lines(page) == ["2024-01-02 09:00:00 Bob: the NEEDLE is here"]
    expect(page.locator("#log mark")).to_have_text(["NEEDLE"])
    expect(page.locator("#q")).to_have_value("needle")
    screenshot(page, "search")
    page.goto(f"{site.base}/?channel=alpha&user=bob&q=Night")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    assert lines(page) == ["2024-01-02 23:59:59 Bob: good night"]
    expect(page.locator("#log mark")).to_have_text(["night"])
    page.goto(f"{site.base}/?channel=alpha&q=kappa&date=2024-01-02")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    expect(page.locator("#log img.emote.hit")).to_have_count(2)  # an emote that matches is marked
    page.goto(f"{site.base}/?channel=alpha&q=nothing%20like%20this&date=2024-01-02")
    expect(page.locator("#status")).to_contain_text("no hits")


def test_keyboard_moves_between_days_and_slash_searches(page: Page, site: Served) -> None:
    open_day(page, site)
    # the arrows are set from the day list, which may come after the lines: keys act once it has
    expect(page.locator("#next")).to_have_attribute("href", re.compile(r"date=2024-01-03$"))
    page.keyboard.press("j")
    expect(page).to_have_url(re.compile(r"date=2024-01-03$"))
    expect(page.locator("#log .line").first).to_contain_text("next day line")
    expect(page.locator("#prev")).to_have_attribute("href", re.compile(r"date=2024-01-02$"))
    page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(r"date=2024-01-02$"))
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    page.keyboard.press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.type("good")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"\?channel=alpha&date=2024-01-02&q=good$"))
    expect(page.locator("#log mark")).to_have_text(["good"])
    page.go_back()
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    assert len(lines(page)) == 12


def test_download_gives_the_lines_shown(page: Page, site: Served, tmp_path: Path) -> None:
    open_day(page, site)
    with page.expect_download() as info:
        page.locator("#download").click()
    download = info.value
    assert download.suggested_filename == "alpha-2024-01-02.txt"
    target = tmp_path / "day.txt"
    download.save_as(target)
    got = target.read_text(encoding="utf-8").splitlines()
    gap = "-- not logged 2024-01-02 10:00:00-2024-01-02 10:30:00 (1800 s): no logger (r0 w1: lost) --"
    server = site.get("/channel/alpha/2024/1/2").text.splitlines()  # the API's text format
    assert [line for line in got if line != gap] == server
    assert got.index(gap) == 9 and len(got) == len(lines(page))
    page.goto(f"{site.base}/?channel=alpha&q=needle&date=2024-01-02")
    expect(page.locator("#log")).to_have_attribute("data-state", "done")
    with page.expect_download() as info:
        page.locator("#download").click()
    info.value.save_as(tmp_path / "search.txt")
    assert (tmp_path / "search.txt").read_text().splitlines() == [
        "[2024-01-02 09:00:00] #alpha bob: the NEEDLE is here"
    ]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "channel=alpha&date=2024-01-02",
        "channel=alpha&user=bob&month=2024-01",
        "channel=alpha&q=e&date=2024-01-02",
    ],
)
def test_phone_width_has_no_horizontal_scroll(browser: Browser, site: Served, query: str) -> None:
    phone = {"viewport": {"width": 375, "height": 740}, "device_scale_factor": 2, "is_mobile": True}
    with new_context(browser, has_touch=True, **phone) as context:
        page = context.new_page()
        page.goto(f"{site.base}/?{query}")
        if query:
            expect(page.locator("#log")).to_have_attribute("data-state", "done")
        else:
            expect(page.locator("#channels a").first).to_be_visible()
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1] == 375
        widest = page.evaluate(
            "Math.max(...[...document.querySelectorAll('#bar > *, #log .line, #status')]"
            ".filter(n => n.offsetParent).map(n => n.getBoundingClientRect().right))"
        )
        assert widest <= 375
        if query.endswith("2024-01-02") and "q=" not in query:
            screenshot(page, "phone")


def test_theme_follows_the_system_and_the_toggle_and_is_kept(browser: Browser, site: Served) -> None:
    background = "getComputedStyle(document.body).backgroundColor"
    for scheme, color in (("light", "rgb(255, 255, 255)"), ("dark", "rgb(24, 24, 27)")):
        with new_context(browser, color_scheme=scheme) as context:
            page = context.new_page()
            open_day(page, site)
            assert page.evaluate(background) == color
            if scheme == "light":
                page.locator("#theme").click()
                assert page.evaluate(background) == "rgb(24, 24, 27)"
                assert page.evaluate("document.documentElement.dataset.theme") == "dark"
                screenshot(page, "day_dark")
                page.reload()
                expect(page.locator("#log")).to_have_attribute("data-state", "done")
                assert page.evaluate(background) == "rgb(24, 24, 27)"  # kept
                page.keyboard.press("t")
                assert page.evaluate(background) == "rgb(255, 255, 255)"


def test_an_unknown_channel_is_a_404_page_that_says_so(page: Page, site: Served) -> None:
    response = page.goto(f"{site.base}/?channel=nosuchchannel&date=2024-01-02")
    assert response is not None and response.status == 404
    expect(page.locator("#status")).to_contain_text("'nosuchchannel' is not logged")
    expect(page.locator("#status")).to_have_class(re.compile(r"\berror\b"))
    assert page.title() == "not found · chatlog"
    response = page.goto(f"{site.base}/?channel=alpha&user=nobody")
    assert response is not None and response.status == 200
    expect(page.locator("#status")).to_contain_text("nothing stored for nobody in #alpha")
    page.goto(f"{site.base}/?channel=alpha&date=2024-01-05")
    expect(page.locator("#status")).to_contain_text("Nothing logged in #alpha on 2024-01-05")


def test_the_page_and_its_assets_come_from_the_server(site: Served) -> None:
    page = site.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "link" not in page.headers
    for asset, kind in (("/static/app.js", "javascript"), ("/static/style.css", "text/css")):
        assert f'"{asset}?v=' in page.text  # named by a hash of its content
        answer = site.get(asset)
        assert answer.status_code == 200 and kind in answer.headers["content-type"], asset
        assert answer.headers["cache-control"] == "public, max-age=86400"
    day = site.get("/?channel=alpha&date=2024-01-02")
    assert day.headers["link"] == "</channel/alpha/2024/1/2?web>; rel=preload; as=fetch; crossorigin"
    assert "link" not in site.get("/?channel=alpha&q=x").headers
    gaps = site.get(f"/web/gaps?channel=alpha&from={jan2(0)}&to={ms(2024, 1, 3)}").json()
    assert gaps == {
        "channel": "alpha",
        "gaps": [{"start": jan2(10), "end": jan2(10, 30), "why": "r0 w1: lost", "filled_from": []}],
    }
    assert site.get("/web/gaps?channel=alpha&from=x&to=1").status_code == 400
    assert site.get("/channel/alpha/2024/1/2").status_code == 200  # the API's routes still answer
