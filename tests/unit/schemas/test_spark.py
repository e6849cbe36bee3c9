"""The Spark schema is derived from the model: same fields, same order, matching types."""

from __future__ import annotations

import typing

import msgspec
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import types as T

from schemas import chat_event, spark


def test_spark_fields_are_the_model_fields_in_order() -> None:
    schema = spark.chat_event_schema()
    assert tuple(f.name for f in schema.fields) == chat_event.FIELD_NAMES


def test_spark_types_follow_the_json_schema_types() -> None:
    js = chat_event.json_schema()["$defs"]["ChatEvent"]["properties"]  # type: ignore[index]
    json_to_spark = {
        "string": T.StringType(),
        "integer": T.LongType(),
        "boolean": T.BooleanType(),
        "object": T.MapType(T.StringType(), T.StringType(), valueContainsNull=False),
    }
    for field in spark.chat_event_schema().fields:
        prop = js[field.name]
        types_ = (
            [prop["type"]] if "type" in prop else [o["type"] for o in prop["anyOf"] if o["type"] != "null"]
        )
        assert len(types_) == 1, field.name
        assert field.dataType == json_to_spark[types_[0]], field.name


def _admits_none(tp: object) -> bool:
    """Whether a (possibly ``Annotated``, possibly nested) annotation admits None."""
    if typing.get_origin(tp) is typing.Annotated:
        return _admits_none(typing.get_args(tp)[0])
    return type(None) in typing.get_args(tp)


def test_nullability_matches_the_model() -> None:
    strict = spark.chat_event_schema(all_nullable=False)
    hints = typing.get_type_hints(chat_event.ChatEvent, include_extras=True)
    for field in strict.fields:
        optional = _admits_none(hints[field.name])
        assert field.nullable == optional, field.name
    assert set(spark.non_nullable_fields()) >= set(chat_event.REQUIRED_FIELDS)
    assert all(
        f.name in spark.non_nullable_fields()
        for f in msgspec.structs.fields(chat_event.ChatEvent)
        if f.required
    )
