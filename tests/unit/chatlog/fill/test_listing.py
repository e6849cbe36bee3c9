"""The days a peer lists: justlog's, rustlog's and chatlog's ``/list`` shape, and one line for another."""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
import pytest

from chatlog.fill.listing import list_path, listed_days, peer_days
from chatlog.fill.peer import PeerFailed


def day(y: int, m: int, d: int) -> int:
    return (date(y, m, d) - date(1970, 1, 1)).days


def test_the_days_of_a_justlog_answer_newest_first_as_strings() -> None:
    body = {
        "availableLogs": [
            {"year": "2025", "month": "3", "day": "5"},
            {"year": "2025", "month": "2", "day": "28"},
        ]
    }

    assert listed_days(body) == {day(2025, 3, 5), day(2025, 2, 28)}


def test_a_month_without_days_is_all_of_its_days() -> None:
    assert listed_days({"availableLogs": [{"year": 2024, "month": 2}]}) == {
        day(2024, 2, d) for d in range(1, 30)
    }


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ([], "not {'availableLogs': [...]}"),
        ({"available_logs": []}, "not {'availableLogs': [...]}"),
        ({"availableLogs": ["2025/3/5"]}, "an entry is not an object"),
        ({"availableLogs": [{"year": "2025", "month": "13", "day": "1"}]}, "an entry is not a date"),
        ({"availableLogs": [{"year": "2025", "month": "2", "day": "30"}]}, "an entry is not a date"),
        ({"availableLogs": [{"month": "2"}]}, "an entry is not a date"),
    ],
)
def test_another_shape_is_one_line(body: Any, said: str) -> None:
    with pytest.raises(ValueError, match="^" + said.replace("[", r"\[").replace("]", r"\]")):
        listed_days(body)


def test_the_list_is_asked_by_login_or_id() -> None:
    assert list_path("forsen") == "/list?channel=forsen"
    assert list_path("forsen", "22484632") == "/list?channelid=22484632"


def answering(status: int, **kw: Any) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/list" and request.url.params["channel"] == "forsen"
        return httpx.Response(status, **kw)

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_a_404_is_a_peer_with_nothing_of_the_channel() -> None:
    with answering(404, text="could not load logs") as http:
        assert peer_days(http, "http://peer", "forsen") == set()


def test_a_page_or_a_wrong_shape_fails_in_one_line() -> None:
    with answering(200, text="<html>") as http, pytest.raises(PeerFailed) as failed:
        peer_days(http, "http://peer", "forsen")
    assert (
        str(failed.value)
        == "answered http://peer/list?channel=forsen with something that is not JSON: '<html>'"
    )

    with answering(200, json={"logs": []}) as http, pytest.raises(PeerFailed) as failed:
        peer_days(http, "http://peer", "forsen")
    assert (
        str(failed.value) == "answered /list?channel=forsen with not {'availableLogs': [...]}: {'logs': []}"
    )
