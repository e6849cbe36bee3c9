"""The chat event contract: the model, the JSON Schema file, the Spark schema and validation agree."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import chat_event
from schemas.chat_event import InvalidEvent, decode, encode, peek_message_id
from tests.twitch_example import ronni_privmsg as sample

SCHEMA_FILE = Path(chat_event.__file__).with_name("chat_event.schema.json")

CONTRACT_FIELDS = (
    "message_id",
    "kind",
    "channel",
    "channel_id",
    "user_login",
    "user_id",
    "display_name",
    "text",
    "is_action",
    "sent_at",
    "received_at",
    "tags",
    "raw",
    "ingester",
    "bad_sent_ts",
)


def assert_both_reject(doc: dict[str, object], reason: str) -> None:
    """The JSON Schema and the decoder both refuse ``doc``; the decoder's error names ``reason``."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, chat_event.json_schema())
    with pytest.raises(InvalidEvent, match=reason):
        decode(json.dumps(doc))


def test_model_has_exactly_the_contract_fields_in_order() -> None:
    assert chat_event.FIELD_NAMES == CONTRACT_FIELDS


def test_committed_json_schema_is_the_generated_one() -> None:
    committed = json.loads(SCHEMA_FILE.read_text())
    assert committed == json.loads(json.dumps(chat_event.json_schema())), (
        "schemas/chat_event.schema.json is stale: run `chatlog schema export`"
    )


def test_json_schema_and_msgspec_agree_on_a_valid_event() -> None:
    doc = json.loads(encode(sample()))
    jsonschema.validate(doc, chat_event.json_schema())
    assert decode(json.dumps(doc)) == sample()


@pytest.mark.parametrize(
    ("mutation", "reason"),
    [
        ({"message_id": ""}, "message_id"),
        ({"sent_at": "yesterday"}, "sent_at"),
        ({"sent_at": -1}, "sent_at"),
        ({"tags": {"a": 1}}, "tags"),
        ({"is_action": "no"}, "is_action"),
        ({"channel": None}, "channel"),
    ],
)
def test_both_validators_reject_the_same_bad_values(mutation: dict[str, object], reason: str) -> None:
    assert_both_reject({**json.loads(encode(sample())), **mutation}, reason)


@pytest.mark.parametrize("missing", chat_event.REQUIRED_FIELDS)
def test_a_missing_required_field_is_rejected_by_both(missing: str) -> None:
    doc = json.loads(encode(sample()))
    del doc[missing]
    assert_both_reject(doc, missing)


def test_not_json_is_an_invalid_event() -> None:
    with pytest.raises(InvalidEvent, match="not JSON"):
        decode(b"{nope")


def test_optional_fields_default_to_null_and_empty() -> None:
    doc = {"message_id": "x", "kind": "NOTICE", "channel": "c", "sent_at": 1, "received_at": 2, "raw": "r"}
    event = decode(json.dumps(doc))
    assert event.user_login is None and event.tags == {} and event.is_action is False


def test_unicode_round_trips() -> None:
    event = sample(text="héllo 🌍 \u200b ñ", display_name="용감한")
    assert decode(encode(event)) == event
    assert msgspec.json.decode(encode(event))["text"] == "héllo 🌍 \u200b ñ"


# -- bounds: every field is bounded once, here, so no record can wedge Cassandra or its readers ----------

_BIG = 100_000


@pytest.mark.parametrize(
    ("mutation", "reason"),
    [
        ({"channel": "c" * _BIG}, "channel"),  # a partition key past Cassandra's 64 KiB key limit
        ({"channel": "c" * (chat_event.MAX_LOGIN_CHARS + 1)}, "channel"),
        ({"user_login": "u" * (chat_event.MAX_LOGIN_CHARS + 1)}, "user_login"),
        ({"channel_id": "1" * (chat_event.MAX_ID_CHARS + 1)}, "channel_id"),
        ({"user_id": "1" * (chat_event.MAX_ID_CHARS + 1)}, "user_id"),
        ({"message_id": "m" * (chat_event.MAX_MESSAGE_ID_CHARS + 1)}, "message_id"),
        ({"kind": "K" * (chat_event.MAX_KIND_CHARS + 1)}, "kind"),
        ({"ingester": "w" * (chat_event.MAX_INGESTER_CHARS + 1)}, "ingester"),
        ({"raw": "r" * (chat_event.MAX_LINE_CHARS + 1)}, "raw"),
        ({"text": "t" * (chat_event.MAX_LINE_CHARS + 1)}, "text"),
        ({"display_name": "d" * (chat_event.MAX_LINE_CHARS + 1)}, "display_name"),
        ({"tags": {f"k{i}": "" for i in range(chat_event.MAX_TAGS + 1)}}, "tags"),
        ({"tags": {"k" * (chat_event.MAX_LINE_CHARS + 1): "v"}}, "tags"),
        ({"tags": {"k": "v" * (chat_event.MAX_LINE_CHARS + 1)}}, "tags"),
        ({"sent_at": 999_999_999_999_999}, "sent_at"),  # stored fine, but the driver cannot read it back
        ({"sent_at": chat_event.MAX_TIME_MS + 1}, "sent_at"),
        ({"received_at": chat_event.MAX_TIME_MS + 1}, "received_at"),
    ],
)
def test_both_validators_reject_a_value_past_its_bound(mutation: dict[str, object], reason: str) -> None:
    assert_both_reject({**json.loads(encode(sample())), **mutation}, reason)


def test_values_at_their_bounds_are_valid() -> None:
    event = sample(
        channel="c" * chat_event.MAX_LOGIN_CHARS,
        user_login="u" * chat_event.MAX_LOGIN_CHARS,
        channel_id="1" * chat_event.MAX_ID_CHARS,
        user_id="2" * chat_event.MAX_ID_CHARS,
        message_id="m" * chat_event.MAX_MESSAGE_ID_CHARS,
        raw="😂" * chat_event.MAX_LINE_CHARS,  # characters, not bytes
        text="t" * chat_event.MAX_LINE_CHARS,
        tags={f"k{i}": "v" for i in range(chat_event.MAX_TAGS)},
        sent_at=chat_event.MAX_TIME_MS,
        received_at=0,
    )
    jsonschema.validate(json.loads(encode(event)), chat_event.json_schema())
    assert decode(encode(event)) == event


def test_the_latest_time_is_one_the_driver_reads_back() -> None:
    from datetime import UTC, datetime, timedelta

    last = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=chat_event.MAX_TIME_MS)
    assert last == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    with pytest.raises(OverflowError):
        last + timedelta(milliseconds=1)


# -- the id read from a record without decoding it (what the sink's writers drop copies by) -----------------

_IDS = st.one_of(
    st.uuids().map(str),
    st.text(max_size=40),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters='"\\'), max_size=40
    ),
)


@settings(max_examples=400, deadline=None)
@given(_IDS)
def test_the_peeked_id_of_an_encoded_event_is_its_id_or_none(message_id: str) -> None:
    """Never another id than the event's: an id JSON escapes is not peeked (the record is decoded then)."""
    data = encode(sample(message_id=message_id))
    peeked = peek_message_id(data)
    assert peeked in (message_id, None)
    plain = all(c not in '"\\' and ord(c) >= 0x20 for c in message_id)
    if plain:
        assert peeked == message_id
    if peeked is None:
        assert not plain


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80) | st.binary(max_size=60).map(lambda b: b'{"message_id":"' + b))
def test_any_bytes_peek_to_nothing_or_the_text_of_their_first_string(data: bytes) -> None:
    peeked = peek_message_id(data)
    if peeked is not None:
        assert data.startswith(b'{"message_id":"' + peeked.encode() + b'"')
        assert "\\" not in peeked


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({"message_id": "m1", "kind": "PRIVMSG"}).encode(),  # a space after the colon
        json.dumps({"kind": "PRIVMSG", "message_id": "m1"}).encode(),  # another producer's field order
        b'{"message_id":"m1',  # cut inside the id
        b'{"message_id":"m\\u0031"}',  # an escape: decoded instead
        b'{"message_id":"\xff\xfe"}',  # not UTF-8
        b'{"message_id":1}',
        b"",
    ],
)
def test_what_is_not_encodes_head_peeks_to_nothing(data: bytes) -> None:
    assert peek_message_id(data) is None


def test_an_encoded_event_peeks_to_its_id_without_the_rest_being_read() -> None:
    data = encode(sample(message_id="abc"))
    assert peek_message_id(data) == "abc" == decode(data).message_id
    assert peek_message_id(data[:20] + b"... anything after the id") == "abc"
