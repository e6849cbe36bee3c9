"""The fast cell encoders write exactly the bytes cassandra-driver's own serializers write."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from cassandra import cqltypes
from cassandra.query import UNSET_VALUE
from sink.writer.cql_cells import cql_name, encoder

TEXT_MAP = cqltypes.lookup_casstype(
    "org.apache.cassandra.db.marshal.FrozenType("
    "org.apache.cassandra.db.marshal.MapType("
    "org.apache.cassandra.db.marshal.UTF8Type,org.apache.cassandra.db.marshal.UTF8Type))"
)
CASES: list[tuple[Any, list[Any]]] = [
    (cqltypes.UTF8Type, ["", "hello", "ünïcødé ✓ 🎉", "x" * 5000]),
    (cqltypes.AsciiType, ["", "plain"]),
    (cqltypes.DateType, [0, 1_700_000_123_456, -1, 2**62, datetime(2026, 11, 21, 15, 4, 5, tzinfo=UTC)]),
    (cqltypes.BooleanType, [True, False]),
    (cqltypes.Int32Type, [0, 600, -5, 2**31 - 1]),
    (TEXT_MAP, [{}, {"a": "b"}, {"badges": "subscriber/12,premium/1", "emotes": "", "ü": "✓"}]),
]


@pytest.mark.parametrize("protocol", [4, 5])
@pytest.mark.parametrize(("cql_type", "values"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_cells_equal_the_drivers_serialization(cql_type: Any, values: list[Any], protocol: int) -> None:
    encode = encoder(cql_type, protocol)
    for value in values:
        assert encode(value) == cql_type.serialize(value, protocol), value


def test_none_is_unset_so_no_tombstone_is_written() -> None:
    for cql_type, _values in CASES:
        assert encoder(cql_type, 4)(None) is UNSET_VALUE


def test_values_the_fast_path_does_not_take_get_the_drivers_answer() -> None:
    timestamp = encoder(cqltypes.DateType, 4)
    with pytest.raises(TypeError):  # the driver's error for a value it cannot write
        timestamp("not a time")
    with pytest.raises(Exception):  # noqa: B017 - struct.error from the driver for an int32 overflow
        encoder(cqltypes.Int32Type, 4)(2**40)
    with pytest.raises(TypeError):  # a bool is an int to Python, not a timestamp to the driver
        timestamp(True)


def test_other_types_fall_back_to_the_driver() -> None:
    uuid_type = cqltypes.UUIDType
    import uuid

    value = uuid.UUID(int=42)
    assert encoder(uuid_type, 4)(value) == uuid_type.serialize(value, 4)
    assert cql_name(TEXT_MAP) == "frozen<map<text, text>>"
