"""Table options that changed after keyspaces were made with them: ``chatlog init`` moves a table still at
an earlier default to the current one (schemas/cassandra.cql), and leaves one set otherwise alone (an
operator's choice).

* ``chat_by_channel``'s compression chunks: 64 KiB until issue 35, 256 KiB since (a channel's day is read in
  order, so a larger chunk costs a read nothing and holds more of the lines' repeated tags: 129.6 -> 119.4 B
  per message, docs/storage.md). New SSTables are written with it; compactions rewrite the old ones in time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

_ZSTD: Final = "org.apache.cassandra.io.compress.ZstdCompressor"
EARLIER_CHANNEL_COMPRESSION: Final = {"class": _ZSTD, "chunk_length_in_kb": "64", "compression_level": "9"}
"""``chat_by_channel``'s compression as schemas/cassandra.cql made it before issue 35."""
CHANNEL_COMPRESSION: Final = "{'class': 'ZstdCompressor', 'chunk_length_in_kb': 256, 'compression_level': 9}"
"""The compression schemas/cassandra.cql gives ``chat_by_channel`` now."""


def compression_of(session: Any, keyspace: str, table: str) -> dict[str, str] | None:
    """``keyspace.table``'s compression options as Cassandra keeps them; None without that table."""
    rows = session.execute(
        "SELECT compression FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    ).all()
    return dict(rows[0].compression or {}) if rows else None


def upgrade_channel_compression(
    session: Any, keyspace: str, tell: Callable[[str], None] = lambda _m: None
) -> bool:
    """Give ``keyspace.chat_by_channel`` :data:`CHANNEL_COMPRESSION` if it still has
    :data:`EARLIER_CHANNEL_COMPRESSION` exactly; whether it did."""
    if compression_of(session, keyspace, "chat_by_channel") != EARLIER_CHANNEL_COMPRESSION:
        return False
    session.execute(
        f"ALTER TABLE {keyspace}.chat_by_channel WITH compression = {CHANNEL_COMPRESSION}", timeout=60
    )
    tell(f"{keyspace}.chat_by_channel: compression chunks of 256 KiB (were 64; compactions rewrite the rest)")
    return True
