"""The columns of the tables the sink writes, as schemas/cassandra.cql creates them: what the sink's row
mapping is checked against, and what its writer's doubles are built with."""

from __future__ import annotations

import re

from schemas.cql import statements
from sink.writer.rows import TABLES

REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


def live_columns() -> dict[str, list[str]]:
    """The columns of the tables the sink writes, as schemas/cassandra.cql creates them."""
    out: dict[str, list[str]] = {}
    for statement in statements("ks", REPLICATION):
        found = re.match(r"CREATE TABLE IF NOT EXISTS ks\.([a-z_]+) \((.*?)PRIMARY KEY", statement, re.DOTALL)
        if found and found.group(1) in TABLES:
            out[found.group(1)] = re.findall(r"^\s+([a-z_]+)\s+[a-z<>, ]+,$", found.group(2), re.MULTILINE)
    return out


LIVE_COLUMNS = live_columns()
