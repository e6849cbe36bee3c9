"""What a fill asks a peer for: the times not logged here nor filled from it, one request per UTC day of
those the peer lists (pure logic)."""

from __future__ import annotations

import calendar

import pytest

from chatlog.fill.asks import Ask, asks, peer_name
from core.coverage_spans import Gap
from core.errors import ChatlogError

DAY = 86_400_000
NOV_20 = calendar.timegm((2026, 11, 20, 0, 0, 0)) * 1000


def test_a_gap_over_midnight_is_asked_as_one_request_per_day() -> None:
    gap = Gap(NOV_20 - 3_600_000 + 500, NOV_20 + DAY + 60_000, "r0 a: lost")

    found = asks([gap], "https://peer")

    assert found == [
        Ask(((NOV_20 - 3_600_000 + 500, NOV_20),)),
        Ask(((NOV_20, NOV_20 + DAY),)),
        Ask(((NOV_20 + DAY, NOV_20 + DAY + 60_000),)),
    ]
    assert [a.path("forsen") for a in found] == [
        f"/channel/forsen/2026/11/19?raw&from={(NOV_20 - 3_600_000) // 1000}&to={NOV_20 // 1000 - 1}",
        f"/channel/forsen/2026/11/20?raw&from={NOV_20 // 1000}&to={(NOV_20 + DAY) // 1000 - 1}",
        f"/channel/forsen/2026/11/21?raw&from={(NOV_20 + DAY) // 1000}&to={(NOV_20 + DAY + 59_999) // 1000}",
    ]


def test_to_is_the_last_whole_second_and_the_windows_take_the_seconds_asked() -> None:
    ask = Ask(((NOV_20 + 10_250, NOV_20 + 20_000), (NOV_20 + 30_000, NOV_20 + 40_001)))

    assert (ask.from_s, ask.to_s) == (NOV_20 // 1000 + 10, NOV_20 // 1000 + 40)
    assert ask.accepted == ((NOV_20 + 10_000, NOV_20 + 20_000), (NOV_20 + 30_000, NOV_20 + 41_000))
    assert ask.seconds == 19.751
    assert ask.path("x", channel_id="22484632") == (
        f"/channelid/22484632/2026/11/20?raw&from={ask.from_s}&to={ask.to_s}"
    )


def test_what_was_filled_from_this_peer_is_not_asked_again_what_another_filled_is() -> None:
    gaps = [
        Gap(NOV_20, NOV_20 + 1_000, "a", ("https://peer",)),
        Gap(NOV_20 + 5_000, NOV_20 + 9_000, "a", ("https://other",)),
        Gap(NOV_20 + 2_000, NOV_20 + 3_000, "a"),
        Gap(NOV_20 + 3_000, NOV_20 + 4_000, "a"),  # touches the one before: one time
    ]

    assert asks(gaps, "https://peer") == [
        Ask(((NOV_20 + 2_000, NOV_20 + 4_000), (NOV_20 + 5_000, NOV_20 + 9_000))),
    ]


def test_only_the_days_the_peer_lists_are_asked() -> None:
    never_logged = Gap(NOV_20 - DAY, NOV_20 + 2 * DAY, "no logger")
    listed = {NOV_20 // DAY - 1, NOV_20 // DAY + 1, NOV_20 // DAY + 7}

    assert asks([never_logged], "https://peer", listed) == [
        Ask(((NOV_20 - DAY, NOV_20),)),
        Ask(((NOV_20 + DAY, NOV_20 + 2 * DAY),)),
    ]
    assert asks([never_logged], "https://peer", set()) == []


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://logs.example.com/", "https://logs.example.com"),
        ("http://user:secret@Logs.Example.com:8025/justlog/?x=1", "http://logs.example.com:8025/justlog"),
        (" http://127.0.0.1:8025 ", "http://127.0.0.1:8025"),
    ],
)
def test_the_peer_is_named_without_login_query_or_trailing_slash(url: str, name: str) -> None:
    assert peer_name(url) == name


@pytest.mark.parametrize("url", ["logs.example.com", "ftp://logs.example.com", "http://", "http://h:99999"])
def test_a_peer_that_is_not_an_http_url_is_one_line(url: str) -> None:
    with pytest.raises(ChatlogError, match="--from: "):
        peer_name(url)
