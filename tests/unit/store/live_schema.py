"""The tables of store/cassandra.cql as the statements :func:`store.schema.statements` makes of it declare
them: each table's columns with their CQL types, its partition key and its clustering columns. What the tests
compare the writers' and readers' statements with (no Cassandra: the schema file is the one definition)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from store.schema import statements

REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
_CREATE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)\.(\w+) \((.*)\)", re.S)
_KEY = re.compile(r"PRIMARY KEY \((.*)\)\s*$", re.S)


@dataclass(frozen=True)
class Table:
    columns: dict[str, str]
    """Column -> its CQL type (lower case), in the order declared."""
    partition: tuple[str, ...]
    clustering: tuple[str, ...]


def _split(text: str) -> list[str]:
    """``text`` split at its top-level commas (not inside ``<...>`` or ``(...)``)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in "<(") - (c in ">)")
        if c == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [part for part in out if part]


def tables(keyspace: str = "ks") -> dict[str, Table]:
    """Every table of the schema, by name."""
    found: dict[str, Table] = {}
    for statement in statements(keyspace, REPLICATION):
        create = _CREATE.match(statement.split(" WITH ")[0].strip())
        if create is None:
            continue
        columns: dict[str, str] = {}
        keys: list[str] = []
        for part in _split(create.group(3)):
            key = _KEY.match(part)
            if key is not None:
                keys = _split(key.group(1))
                continue
            name, cql_type = part.split(None, 1)
            if cql_type.upper().endswith(" PRIMARY KEY"):  # `name text PRIMARY KEY`
                cql_type = cql_type[: -len(" PRIMARY KEY")]
                keys = [name]
            columns[name] = cql_type.strip().lower()
        assert keys, statement
        first = keys[0]
        partition = tuple(_split(first[1:-1])) if first.startswith("(") else (first,)
        found[create.group(2)] = Table(columns, partition, tuple(keys[1:]))
    return found
