"""The opt-out topic's keys and values (consent/records.py)."""

from __future__ import annotations

import pytest

from consent.records import (
    CODE_ALPHABET,
    Code,
    InvalidRecord,
    OptOut,
    check_id,
    decode,
    encode,
    key_of,
    new_code,
    normalize_code,
)


def test_keys_are_kind_and_twitch_id() -> None:
    assert key_of("user", " 123 ") == "user:123"
    assert key_of("channel", "9") == "channel:9"
    assert check_id("user", "42") == "42"


@pytest.mark.parametrize(("kind", "value"), [("user", "abc"), ("user", ""), ("user", "1:2"), ("team", "1")])
def test_anything_else_is_one_line(kind: str, value: str) -> None:
    with pytest.raises(InvalidRecord) as caught:
        key_of(kind, value)
    assert "\n" not in str(caught.value)


def test_values_round_trip_and_a_tombstone_is_none() -> None:
    optout = OptOut(kind="user", id="123", reason="asked", by="cli:me", at=1, keep_history=True)
    assert decode("user:123", encode(optout)) == optout
    code = Code(code="abcdefgh", expires_at=5, by="api:self-service")
    assert decode("code:abcdefgh", encode(code)) == code
    assert decode("channel:5", None) is None


def test_a_value_under_another_key_or_not_json_is_rejected() -> None:
    optout = OptOut(kind="user", id="123", by="x", at=1)
    with pytest.raises(InvalidRecord, match="holds a value of key 'user:123'"):
        decode("user:124", encode(optout))
    with pytest.raises(InvalidRecord, match="invalid field"):
        decode("user:1", b"{not json")
    with pytest.raises(InvalidRecord, match="not an opt-out topic key"):
        decode("login:x", b"{}")


def test_codes_are_random_short_and_unambiguous() -> None:
    codes = {new_code() for _ in range(500)}
    assert len(codes) == 500
    assert all(len(c) == 8 and set(c) <= set(CODE_ALPHABET) for c in codes)
    assert not set("01ilo") & set(CODE_ALPHABET)
    assert normalize_code(" ABCDEFGH ") == "abcdefgh"
    assert normalize_code("abcdefg1") is None and normalize_code("abc") is None
