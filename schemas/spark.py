"""The Spark schema of the chat event, derived from :class:`schemas.chat_event.ChatEvent`."""

from __future__ import annotations

import types
import typing
from typing import TYPE_CHECKING, Any, get_args, get_origin, get_type_hints

import msgspec

from schemas.chat_event import ChatEvent

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType


def _spark_type(tp: Any) -> tuple[DataType, bool]:
    """(Spark type, nullable) for one annotation of the model."""
    from pyspark.sql import types as T

    if get_origin(tp) is typing.Annotated:
        return _spark_type(get_args(tp)[0])
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {tp!r}")
        return _spark_type(args[0])[0], True
    if tp is str:
        return T.StringType(), False
    if tp is bool:
        return T.BooleanType(), False
    if tp is int:
        return T.LongType(), False
    if tp is float:
        return T.DoubleType(), False
    if get_origin(tp) is dict:
        key, value = (_spark_type(a)[0] for a in get_args(tp))
        return T.MapType(key, value, valueContainsNull=False), False
    raise TypeError(f"no Spark type for {tp!r}")


def chat_event_schema(*, all_nullable: bool = True) -> StructType:
    """The Spark ``StructType`` of the chat event, fields in contract order.

    ``all_nullable`` (default) is what ``from_json`` needs: Spark marks everything it parses nullable,
    and the sink's writer validates every record with msgspec, so that a record missing a required
    field goes to the dead-letter topic instead of failing the query.
    """
    from pyspark.sql import types as T

    hints = get_type_hints(ChatEvent, include_extras=True)
    fields = []
    for f in msgspec.structs.fields(ChatEvent):
        dtype, nullable = _spark_type(hints[f.name])
        fields.append(T.StructField(f.name, dtype, nullable=all_nullable or nullable))
    return T.StructType(fields)


def non_nullable_fields() -> tuple[str, ...]:
    """Fields whose value may never be null in a valid event."""
    hints = get_type_hints(ChatEvent, include_extras=True)
    return tuple(f.name for f in msgspec.structs.fields(ChatEvent) if not _is_optional(hints[f.name]))


def _is_optional(tp: Any) -> bool:
    if get_origin(tp) is typing.Annotated:
        return _is_optional(get_args(tp)[0])
    return get_origin(tp) in (typing.Union, types.UnionType) and type(None) in get_args(tp)
