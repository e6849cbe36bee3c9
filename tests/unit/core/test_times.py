"""Times on the command line: a bad or out-of-range one is a one-line ChatlogError (issue 13, item 3)."""

from __future__ import annotations

import pytest

from core.errors import ChatlogError
from core.times import MAX_MS, parse_time


def test_epoch_ms_and_iso_8601() -> None:
    assert parse_time("0") == 0
    assert parse_time(str(MAX_MS)) == MAX_MS
    assert parse_time(" 1795281600000 ") == 1_795_281_600_000
    assert parse_time("2026-11-21T15:04:05Z") == 1_795_273_445_000
    assert parse_time("9999-12-31T23:59:59.999Z") == MAX_MS


@pytest.mark.parametrize(
    "text",
    ["²", "١٢٣", "\uff11\uff12\uff13", "yesterday", "", "2026-13-01", "12:00", "2026-11-21T15:04:05Z;x"],
)
def test_not_a_time(text: str) -> None:
    with pytest.raises(ChatlogError, match=r"^--since: .* is not a time") as info:
        parse_time(text, "--since")
    assert len(str(info.value)) < 200


@pytest.mark.parametrize(
    "text",
    [
        "99999999999999999999999",
        "9" * 5000,
        str(MAX_MS + 1),
        "-1",
        "1969-12-31T23:59:59Z",
        "0001-01-01",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
    ],
)
def test_out_of_range(text: str) -> None:
    with pytest.raises(ChatlogError, match=r"^--until: .* is out of range"):
        parse_time(text, "--until")
