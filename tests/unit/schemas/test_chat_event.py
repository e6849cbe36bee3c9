"""The chat event contract: the model, the JSON Schema file, the Spark schema and validation agree."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import msgspec
import pytest

from schemas import chat_event
from schemas.chat_event import ChatEvent, InvalidEvent, decode, encode

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
)


def sample(**overrides: object) -> ChatEvent:
    base: dict[str, object] = dict(
        message_id="b34ccfc7-4977-403a-8a94-33c6bac34fb8",
        kind="PRIVMSG",
        channel="ronni",
        channel_id="1337",
        user_login="ronni",
        user_id="1337",
        display_name="ronni",
        text="Kappa Keepo",
        is_action=False,
        sent_at=1507246572675,
        received_at=1507246572700,
        tags={"id": "b34ccfc7-4977-403a-8a94-33c6bac34fb8", "display-name": "ronni"},
        raw="@id=b34c :ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #ronni :Kappa Keepo",
        ingester="w1",
    )
    base.update(overrides)
    return ChatEvent(**base)  # type: ignore[arg-type]


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
    doc = json.loads(encode(sample()))
    doc.update(mutation)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, chat_event.json_schema())
    with pytest.raises(InvalidEvent, match=reason):
        decode(json.dumps(doc))


@pytest.mark.parametrize("missing", chat_event.REQUIRED_FIELDS)
def test_a_missing_required_field_is_rejected_by_both(missing: str) -> None:
    doc = json.loads(encode(sample()))
    del doc[missing]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, chat_event.json_schema())
    with pytest.raises(InvalidEvent, match=missing):
        decode(json.dumps(doc))


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
