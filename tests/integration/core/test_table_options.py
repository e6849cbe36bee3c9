"""``chatlog init`` (core.cql.apply_schema) on a keyspace whose channel table has an earlier default's
compression (64 KiB chunks): moved to today's 256 KiB; a table an operator set otherwise is left as it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from core.cql import apply_schema, connect
from core.settings import StackSettings
from core.table_options import EARLIER_CHANNEL_COMPRESSION, compression_of

CHANNEL_TABLE = """CREATE TABLE {ks}.chat_by_channel (
  channel_key text, bucket timestamp, sent_at timestamp, message_id uuid, line text, received_at timestamp,
  PRIMARY KEY ((channel_key, bucket), sent_at, message_id))
  WITH compression = {{'class': 'ZstdCompressor', 'chunk_length_in_kb': {kb}, 'compression_level': 9}}"""


@pytest.fixture
def made(stack: StackSettings, unique: str) -> Iterator[tuple[StackSettings, Any]]:
    settings = stack.model_copy(update={"cassandra_keyspace": f"opts{unique}"})
    cluster, session = connect(settings)
    try:
        yield settings, session
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {settings.cassandra_keyspace}", timeout=60)
        cluster.shutdown()


def _with_channel_table(settings: StackSettings, session: Any, kb: int) -> str:
    ks = settings.cassandra_keyspace
    session.execute(
        f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    )
    session.execute(CHANNEL_TABLE.format(ks=ks, kb=kb), timeout=60)
    return ks


def test_a_channel_table_at_the_earlier_64_kib_is_moved_to_256(made: tuple[StackSettings, Any]) -> None:
    settings, session = made
    ks = _with_channel_table(settings, session, 64)
    assert compression_of(session, ks, "chat_by_channel") == EARLIER_CHANNEL_COMPRESSION
    told: list[str] = []
    apply_schema(settings, tell=told.append)
    assert compression_of(session, ks, "chat_by_channel") == {
        **EARLIER_CHANNEL_COMPRESSION,
        "chunk_length_in_kb": "256",
    }
    assert any("chat_by_channel: compression chunks of 256 KiB" in line for line in told)
    told.clear()
    apply_schema(settings, tell=told.append)  # again: nothing to move
    assert not any("compression" in line for line in told)


def test_a_channel_table_set_otherwise_is_left_alone(made: tuple[StackSettings, Any]) -> None:
    settings, session = made
    ks = _with_channel_table(settings, session, 128)
    apply_schema(settings)
    assert compression_of(session, ks, "chat_by_channel") == {
        **EARLIER_CHANNEL_COMPRESSION,
        "chunk_length_in_kb": "128",
    }


def test_a_new_keyspace_is_made_with_256_kib_chunks(made: tuple[StackSettings, Any]) -> None:
    settings, session = made
    apply_schema(settings)
    options = compression_of(session, settings.cassandra_keyspace, "chat_by_channel")
    assert options is not None and options["chunk_length_in_kb"] == "256"
