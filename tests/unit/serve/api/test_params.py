"""Query parameters and path dates: parsed, or a 400 that names the parameter."""

from __future__ import annotations

import pytest
from starlette.datastructures import QueryParams

from serve.api.params import PLAIN, Format, day_range, log_query, month_range, narrowed
from serve.errors import ApiError


def test_format_flags_and_precedence() -> None:
    assert log_query(QueryParams("")).format is Format.TEXT
    assert log_query(QueryParams("json")).format is Format.JSON
    assert log_query(QueryParams("type=json")).format is Format.JSON
    assert log_query(QueryParams("json&jsonBasic")).format is Format.JSON_BASIC
    assert log_query(QueryParams("json=1&raw=0")).format is Format.RAW
    assert log_query(QueryParams("ndjson")).format is Format.NDJSON
    assert log_query(QueryParams("web")).format is Format.WEB  # the web page's own
    assert log_query(QueryParams("web&ndjson")).format is Format.NDJSON
    assert log_query(QueryParams("reverse")).reverse and not log_query(QueryParams("")).reverse


def test_limit_offset_from_to() -> None:
    q = log_query(QueryParams("limit=5&offset=2&from=1704153600&to=2024-01-02T01:00:00Z"))
    assert (q.limit, q.offset, q.since_ms, q.until_ms) == (5, 2, 1_704_153_600_000, 1_704_157_200_000)
    assert log_query(QueryParams("to=1704153600")).until_ms == 1_704_153_600_999  # the whole second
    assert log_query(QueryParams("from=2024-01-02T01:00:00%2B01:00")).since_ms == 1_704_153_600_000
    assert log_query(QueryParams("from=2024-01-02T00:00:00")).since_ms == 1_704_153_600_000  # UTC


@pytest.mark.parametrize(
    ("query", "name"),
    [("limit=x", "limit"), ("offset=-1", "offset"), ("limit=1e3", "limit"), ("from=soon", "from"),
     ("to=2024-13-01", "to"), ("from=99999999999999", "from")],
)  # fmt: skip
def test_bad_parameters_are_400_naming_them(query: str, name: str) -> None:
    with pytest.raises(ApiError) as caught:
        log_query(QueryParams(query))
    assert caught.value.status == 400 and caught.value.message.startswith(f"invalid {name}:")


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("from=1704153600000", "from is in unix seconds, not ms"),  # a client sending ms
        ("to=1234567890123456", "out of range (unix seconds, 1970 .. 9999)"),  # 16 digits: not RFC 3339
        ("from=" + "9" * 5000, "out of range (unix seconds, 1970 .. 9999)"),
        ("from=-5", "out of range (1970 .. 9999)"),
    ],
)
def test_a_time_in_digits_out_of_range_says_what_it_is_taken_for(query: str, says: str) -> None:
    with pytest.raises(ApiError) as caught:
        log_query(QueryParams(query))
    assert caught.value.status == 400 and says in caught.value.message and len(caught.value.message) < 200


def test_dates() -> None:
    assert day_range("2024", "1", "2") == (1_704_153_600_000, 1_704_240_000_000)
    assert day_range("2024", "02", "29")[0] == 1_709_164_800_000
    assert month_range("2024", "2") == (1_706_745_600_000, 1_709_251_200_000)  # 29 days
    for args, word in (
        (("2023", "2", "29"), "day"),
        (("2024", "0", "1"), "month"),
        (("24x", "1", "1"), "year"),
    ):
        with pytest.raises(ApiError, match=word):
            day_range(*args)


def test_narrowed() -> None:
    q = log_query(QueryParams("from=1704153601&to=1704153602"))
    assert narrowed(1_704_153_600_000, 1_704_240_000_000, q) == (1_704_153_601_000, 1_704_153_603_000)


def test_a_query_without_parameters_is_the_plain_query_parsed_parameters_would_give() -> None:
    assert log_query(QueryParams("")) is PLAIN
    assert log_query(QueryParams("x=1")) == PLAIN  # parsed: an unknown parameter changes nothing


@pytest.mark.parametrize(
    "bad", [("2024", "13"), ("2024", "0"), ("1969", "1"), ("2024", "1x"), ("02024", "1")]
)
def test_a_bad_month_is_refused_every_time_it_is_asked(bad: tuple[str, str]) -> None:
    for _ in range(2):  # the ranges are kept (lru_cache): a refusal is not
        with pytest.raises(ApiError) as refused:
            month_range(*bad)
        assert refused.value.status == 400


def test_a_kept_range_is_the_range() -> None:
    for _ in range(2):
        assert month_range("2024", "2") == (1_706_745_600_000, 1_709_251_200_000)
        assert day_range("2024", "02", "29") == (1_709_164_800_000, 1_709_251_200_000)
    with pytest.raises(ApiError):
        day_range("2023", "2", "29")
