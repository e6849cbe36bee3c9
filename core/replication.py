"""Cassandra replication maps as settings give them: parsed as a literal and rendered back, so nothing that
could end a CQL string or statement reaches one (``CHATLOG_CASSANDRA_REPLICATION``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

STRATEGIES = ("SimpleStrategy", "NetworkTopologyStrategy")
_LOCATOR = re.compile(r"org\.apache\.cassandra\.locator\.[A-Za-z][A-Za-z0-9_]{0,63}")
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}")  # 'class', 'replication_factor', a DC name
_VALUE = re.compile(r"[A-Za-z0-9_.\-/]{1,64}")  # a class name, '3', '3/1' (transient replicas)
_MAX_TEXT = 2000
_MAX_REPLICAS = 1000


def replication_map(text: str) -> dict[str, str | int]:
    """The replication map in ``text`` (``{'class': 'SimpleStrategy', 'replication_factor': 1}``).

    A literal (``ast.literal_eval``, no code runs) dict of safe names to safe strings or small integers,
    whose ``'class'`` is a Cassandra replication strategy; ValueError otherwise. Nothing that could end
    the CQL string or statement (quotes, ``;``, comments) passes.
    """
    if len(text) > _MAX_TEXT:
        raise ValueError(f"replication map longer than {_MAX_TEXT} characters")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(
            "not a map literal such as {'class': 'SimpleStrategy', 'replication_factor': 1}"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("not a map literal such as {'class': 'SimpleStrategy', 'replication_factor': 1}")
    out: dict[str, str | int] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(f"replication key {str(key)[:40]!r}: letters, digits, _ . - only")
        count = isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= _MAX_REPLICAS
        if count or (isinstance(item, str) and _VALUE.fullmatch(item)):
            out[key] = item
        else:
            raise ValueError(
                f"replication value of {key!r}: a count 0..{_MAX_REPLICAS} or a name of A-Z a-z 0-9 _ . - /"
            )
    strategy = out.get("class")
    if not isinstance(strategy, str) or not (strategy in STRATEGIES or _LOCATOR.fullmatch(strategy)):
        raise ValueError(f"'class' must be {' or '.join(STRATEGIES)} (or org.apache.cassandra.locator.*)")
    return out


def render_replication(replication: Mapping[str, str | int]) -> str:
    """CQL for a map from :func:`replication_map`: every value rendered from the parsed one."""
    items = (f"'{k}': {v}" if isinstance(v, int) else f"'{k}': '{v}'" for k, v in replication.items())
    return "{" + ", ".join(items) + "}"


def normalize_replication(text: str) -> str:
    """``text`` parsed and rendered back (ValueError when it is not a safe replication map)."""
    return render_replication(replication_map(text))
