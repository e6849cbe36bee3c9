"""Channel names and the records of the registry (pure; no Kafka)."""

from __future__ import annotations

import pytest

from ingest.registry import (
    ChannelRecord,
    InvalidChannelName,
    decode_record,
    encode_record,
    names_from_text,
    normalize,
    normalize_all,
)


@pytest.mark.parametrize(
    ("raw", "login"),
    [("#Foo", "foo"), ("bar_1", "bar_1"), ("  #x  ", "x"), ("A" * 25, "a" * 25)],
)
def test_twitch_names_are_normalised(raw: str, login: str) -> None:
    assert normalize(raw, "twitch") == login


@pytest.mark.parametrize("raw", ["", "#", "a" * 26, "with space", "dash-ed", "dot.ted", "##double", "é"])
def test_bad_twitch_names_raise_naming_the_name(raw: str) -> None:
    with pytest.raises(InvalidChannelName) as exc:
        normalize(raw, "twitch")
    assert repr(raw) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_ircv3_names_allow_dash_and_dot_but_not_leading() -> None:
    assert normalize("#Rust-Lang.dev", "ircv3") == "rust-lang.dev"
    assert normalize("b" * 50, "ircv3") == "b" * 50
    for bad in ("-x", ".x", "b" * 51, "a,b", "a:b", "#a#b", "a\x07"):
        with pytest.raises(InvalidChannelName):
            normalize(bad, "ircv3")


def test_normalize_all_dedupes_and_keeps_order() -> None:
    assert normalize_all(["#B", "a", "b", "#A", "c"], "twitch") == ["b", "a", "c"]


def test_normalize_all_rejects_everything_on_one_bad_name_and_counts_them() -> None:
    with pytest.raises(InvalidChannelName) as exc:
        normalize_all(["good", "bad name", "ok", "also bad", "x" * 30], "twitch")
    message = str(exc.value)
    assert "'bad name'" in message
    assert "2 more bad name(s)" in message
    assert "nothing was changed" in message


def test_names_from_text_splits_on_whitespace_and_commas() -> None:
    assert names_from_text("a\n#b, c\n\n  d\te,,f\n") == ["a", "#b", "c", "d", "e", "f"]


def test_record_round_trip_and_foreign_values() -> None:
    value = encode_record("foo", 1234)
    assert decode_record("foo", value) == ChannelRecord(login="foo", added_at=1234)
    assert decode_record("bar", b"not json") == ChannelRecord(login="bar", added_at=0)
