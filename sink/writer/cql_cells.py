"""Serializing Python values into CQL cells (native protocol bytes), fast.

The writer binds every column of every row; with cassandra-driver's generic ``serialize`` that was the
largest single cost of the sink's Python workers (a ``frozen<map<text, text>>`` of tags most of all;
``chatlog bench sink``'s raw insert reports the workers' CPU per event, results/bench_sink*.json
``python_workers``). For the few CQL types the sink writes this module has
encoders that produce the same bytes for the values a chat event holds (int ms, str, bool, dict of str, uuid)
at a fraction of the cost; any other type, or a value of another Python type, goes to the driver's own
``serialize``. ``tests/unit/sink/writer/test_cql_cells.py`` checks byte equality with the driver.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

Encoder = Callable[[Any], Any]
"""A value -> its cell (bytes), or the driver's ``UNSET_VALUE`` for None (no cell, no tombstone)."""

_INT32 = struct.Struct(">i").pack
_INT64 = struct.Struct(">q").pack
_TRUE, _FALSE = b"\x01", b"\x00"


def _text(value: Any) -> bytes:
    encoded: bytes = value.encode("utf-8")
    return encoded


def _timestamp(value: Any) -> bytes:
    return _INT64(value)


def _boolean(value: Any) -> bytes:
    return _TRUE if value else _FALSE


def _int(value: Any) -> bytes:
    return _INT32(value)


def _text_map(value: Any) -> bytes:
    parts = [_INT32(len(value))]
    for key, item in value.items():
        k = key.encode("utf-8")
        v = item.encode("utf-8")
        parts += (_INT32(len(k)), k, _INT32(len(v)), v)
    return b"".join(parts)


def _uuid(value: Any) -> bytes:
    encoded: bytes = value.bytes
    return encoded


_FAST: dict[str, Callable[[Any], bytes]] = {
    "uuid": _uuid,
    "text": _text,
    "ascii": _text,
    "timestamp": _timestamp,
    "boolean": _boolean,
    "int": _int,
    "frozen<map<text, text>>": _text_map,
    "map<text, text>": _text_map,
}
_NOT_FAST = (AttributeError, TypeError, struct.error)
"""What a fast encoder raises for a value it does not take (a datetime, bytes, ...): the driver decides."""


def cql_name(cql_type: Any) -> str:
    """The CQL name of a driver type class (``frozen<map<text, text>>``, ``timestamp``, ...)."""
    name: str = cql_type.cql_parameterized_type()
    return name.replace("varchar", "text")


def encoder(cql_type: Any, protocol_version: int) -> Encoder:
    """The cell encoder of a column of ``cql_type`` (a ``cassandra.cqltypes`` class).

    None becomes ``UNSET_VALUE``: the column is left out of the write, so an absent value costs
    neither a cell nor a tombstone, and a replayed event never erases what another copy wrote.
    """
    from cassandra.query import UNSET_VALUE

    generic = cql_type.serialize
    fast = _FAST.get(cql_name(cql_type))
    if fast is None:

        def general(value: Any) -> Any:
            return UNSET_VALUE if value is None else generic(value, protocol_version)

        return general

    def cell(value: Any) -> Any:
        if value is None:
            return UNSET_VALUE
        if type(value) is bool and fast is not _boolean:
            return generic(value, protocol_version)
        try:
            return fast(value)
        except _NOT_FAST:
            return generic(value, protocol_version)

    return cell
