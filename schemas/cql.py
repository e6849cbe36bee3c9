"""The Cassandra schema from ``cassandra.cql`` (the one place it is defined)."""

from __future__ import annotations

import re
from importlib import resources

BUCKET_MS = 5 * 60 * 1000
"""Width of a ``messages_by_channel`` time bucket; see the sizing note in cassandra.cql."""


def statements(keyspace: str, replication: str) -> list[str]:
    """The CQL statements, filled in, comments removed, in order."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,47}", keyspace):
        raise ValueError(f"invalid keyspace name {keyspace!r}: lower-case letters, digits and _ only")
    text = resources.files("schemas").joinpath("cassandra.cql").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    text = text.format(keyspace=keyspace, replication=replication)
    return [s.strip() for s in text.split(";") if s.strip()]


def bucket_of(sent_at_ms: int) -> int:
    """Start (epoch ms) of the time bucket that holds ``sent_at_ms``."""
    return sent_at_ms - sent_at_ms % BUCKET_MS
