"""Bytes on disk of a keyspace's line tables in the local stack's Cassandra (``chatlog bench vs-justlog``):
flush them, let compactions settle, compact each into one SSTable, and count their ``*-Data.db`` bytes.

The tables are :data:`LOG_TABLES`, the tables that hold the lines and the indexes that find them, as
:mod:`store.write` names them (table names are spelled in store/ only). The local stack has no nodetool (no
JMX client), so a flush is ``ALTER TABLE ... WITH memtable_flush_period_in_ms = 1000`` (Cassandra flushes
the memtable within the second), and a major compaction is a size-tiered strategy whose one bucket takes
every SSTable of the table (:data:`MAJOR_COMPACTION`). Files are read in Cassandra's data directory
(``<data_dir>/<keyspace>/<table>-<id>/``).
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError
from store.write import BLOCK_TABLES, INDEX_TABLES

LOG_TABLES: Final[tuple[str, ...]] = (*BLOCK_TABLES.values(), *INDEX_TABLES)
"""The tables of the lines (blocks) and of their indexes: what a keyspace's lines take on disk."""

MAJOR_COMPACTION: Final = (
    "{'class': 'SizeTieredCompactionStrategy', 'min_threshold': 2, 'max_threshold': 64, "
    "'bucket_low': 0.001, 'bucket_high': 1000, 'min_sstable_size': 1099511627776}"
)
"""Size-tiered compaction whose one bucket takes every SSTable of the table, two at least: a major
compaction without nodetool. ``min_sstable_size`` (1 TiB: every SSTable is "small", so all share one
bucket) as well: otherwise a 300 MB SSTable and the one-row SSTable written after the flush are more than
``bucket_high`` apart and are never compacted together."""


# -- files ---------------------------------------------------------------------------------------------


def table_dir(data_dir: Path, keyspace: str, table: str) -> Path | None:
    """The directory of ``keyspace.table`` in Cassandra's ``data_dir`` (None before its first flush)."""
    found = sorted((data_dir / keyspace).glob(f"{table}-*"))
    return found[0] if found else None


def sstables(directory: Path) -> list[Path]:
    """The ``*-Data.db`` files of a table's directory."""
    return sorted(directory.glob("*-Data.db"))


def table_files(data_dir: Path, keyspace: str, table: str) -> tuple[str, ...]:
    """The names of the files of ``keyspace.table`` (none yet: empty)."""
    d = table_dir(data_dir, keyspace, table)
    return tuple(sorted(p.name for p in d.iterdir())) if d is not None and d.exists() else ()


def keyspace_files(data_dir: Path, keyspace: str) -> tuple[tuple[str, int], ...]:
    """(path under the keyspace's directory, size) of every file of ``keyspace``, snapshots and backups
    left out."""
    root = data_dir / keyspace
    if not root.is_dir():
        return ()
    return tuple(
        sorted(
            (str(p.relative_to(root)), p.stat().st_size)
            for p in root.rglob("*")
            if p.is_file() and not {"snapshots", "backups"} & set(p.relative_to(root).parts)
        )
    )


def compression_info(path: Path) -> dict[str, Any]:
    """The header of a ``*-CompressionInfo.db``: compressor, chunk length, uncompressed data length."""
    blob = path.read_bytes()
    at = 0

    def utf() -> str:
        nonlocal at
        (size,) = struct.unpack_from(">H", blob, at)
        at += 2 + size
        return blob[at - size : at].decode()

    compressor = utf()
    (options,) = struct.unpack_from(">i", blob, at)
    at += 4
    for _ in range(options):
        utf()
        utf()
    chunk, _max_compressed, data_length, chunks = struct.unpack_from(">iiqi", blob, at)
    if abs(chunks - math.ceil(data_length / chunk)) > 1:  # a flush may end with an empty chunk
        raise ValueError(f"{path.name}: {chunks} chunks of {chunk} for {data_length} bytes")
    return {"compressor": compressor, "chunk": chunk, "data_length": data_length}


def disk_usage(
    data_dir: Path, keyspace: str, messages: int, raw_mean: float, tables: Sequence[str] = LOG_TABLES
) -> dict[str, Any]:
    """Bytes of the ``*-Data.db`` files of ``tables``, per table and in all, per message and against the
    raw line (``raw_mean`` bytes)."""
    if messages < 1:
        raise ValueError(f"messages must be positive, got {messages}")
    by_table: dict[str, Any] = {}
    total = 0
    for table in tables:
        d = table_dir(data_dir, keyspace, table)
        data = sstables(d) if d is not None else []
        size = sum(p.stat().st_size for p in data)
        infos = [
            compression_info(p.with_name(p.name.replace("-Data.db", "-CompressionInfo.db"))) for p in data
        ]
        by_table[table] = {
            "sstables": len(data),
            "compressor": sorted({i["compressor"] for i in infos}),
            "data_db_bytes": size,
            "uncompressed_bytes": sum(i["data_length"] for i in infos),
            "bytes_per_message": round(size / messages, 1),
        }
        total += size
    per = total / messages
    return {
        "tables": by_table,
        "data_db_bytes": total,
        "messages": messages,
        "bytes_per_message": round(per, 1),
        "raw_line_bytes_mean": raw_mean,
        "ratio_to_raw_line": round(per / raw_mean, 3) if raw_mean else None,
    }


# -- flush, compactions --------------------------------------------------------------------------------


def compacting(session: Any, keyspace: str | None) -> bool:
    """Whether Cassandra runs an SSTable task (a compaction) in ``keyspace`` (None: in any keyspace)."""
    try:
        rows = session.execute("SELECT keyspace_name FROM system_views.sstable_tasks", timeout=30)
    except Exception:
        return False
    return any(keyspace is None or r.keyspace_name == keyspace for r in rows)


def _flushed(data_dir: Path, keyspace: str, tables: Sequence[str]) -> bool:
    return all(any(f.endswith("-Data.db") for f in table_files(data_dir, keyspace, t)) for t in tables)


def flush(
    session: Any, keyspace: str, data_dir: Path, timeout_s: float, tables: Sequence[str] = LOG_TABLES
) -> float:
    """Flush every table of ``keyspace`` (a flush period of a second), until each of ``tables`` has an
    SSTable; the seconds it took (ChatlogError at ``timeout_s``)."""
    from store.layout import tables_of

    t0 = time.monotonic()
    for name in sorted(tables_of(session, keyspace)):
        session.execute(f"ALTER TABLE {keyspace}.{name} WITH memtable_flush_period_in_ms = 1000", timeout=120)
    while not _flushed(data_dir, keyspace, tables):
        if time.monotonic() - t0 > timeout_s:
            raise ChatlogError(f"{keyspace}: the tables were not flushed in {timeout_s:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - t0


def settle(
    session: Any,
    keyspace: str,
    data_dir: Path,
    timeout_s: float,
    quiet_s: float = 5.0,
    tell: Callable[[str], None] = lambda _m: None,
) -> float:
    """Wait until no compaction of ``keyspace`` runs and its files stayed the same for ``quiet_s``; the
    seconds it took (at ``timeout_s`` it gives up and tells so)."""
    t0 = time.monotonic()
    last, since = keyspace_files(data_dir, keyspace), time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        time.sleep(1.0)
        now = keyspace_files(data_dir, keyspace)
        if now != last or compacting(session, keyspace):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return time.monotonic() - t0
    tell(f"{keyspace}: compactions had not settled after {timeout_s:.0f} s; measuring anyway")
    return time.monotonic() - t0


def wait_compacted(
    session: Any, keyspace: str, files: Callable[[], list[tuple[str, ...]]], t0: float, timeout_s: float
) -> float:
    """Wait until each table's ``files()`` hold one SSTable, nothing temporary, unchanged for 3 s, and no
    compaction of ``keyspace`` runs; returns the seconds since ``t0`` (ChatlogError at ``timeout_s``)."""
    stable_since, last = time.monotonic(), None
    while time.monotonic() - t0 < timeout_s:
        state = files()
        single = all(sum(1 for f in names if f.endswith("-Data.db")) == 1 for names in state)
        busy = any("tmp" in f for names in state for f in names)
        if state != last:
            stable_since, last = time.monotonic(), state
        elif (
            single
            and not busy
            and time.monotonic() - stable_since > 3.0
            and not compacting(session, keyspace)
        ):
            return time.monotonic() - t0
        time.sleep(0.5)
    raise ChatlogError(f"{keyspace}: the tables did not compact to one SSTable each in {timeout_s:.0f} s")


def flush_and_compact(
    session: Any, keyspace: str, data_dir: Path, timeout_s: float, tables: Sequence[str] = LOG_TABLES
) -> float:
    """Flush ``tables`` and compact each into one SSTable (:data:`MAJOR_COMPACTION`); the seconds it took.

    A table whose rows are all in one SSTable would never be compacted (two at least), and its rows deleted
    by ``chatlog pack`` would stay on disk: so one row of each table is written again once it has flushed
    (the same cells: nothing more once compacted), a second SSTable, and the compaction merges them."""
    t0 = time.monotonic()
    for table in tables:
        session.execute(f"ALTER TABLE {keyspace}.{table} WITH compaction = {MAJOR_COMPACTION}", timeout=120)
        session.execute(
            f"ALTER TABLE {keyspace}.{table} WITH memtable_flush_period_in_ms = 1000", timeout=120
        )
    while not _flushed(data_dir, keyspace, tables):
        if time.monotonic() - t0 > timeout_s:
            raise ChatlogError(f"{keyspace}: the tables were not flushed in {timeout_s:.0f} s")
        time.sleep(0.5)
    for table in tables:
        write_one_again(session, keyspace, table)
    return wait_compacted(
        session, keyspace, lambda: [table_files(data_dir, keyspace, t) for t in tables], t0, timeout_s
    )


def write_one_again(session: Any, keyspace: str, table: str) -> None:
    """Write one row of ``table`` again, the same cells (ChatlogError when the table is empty)."""
    rows = session.execute(f"SELECT * FROM {keyspace}.{table} LIMIT 1", timeout=60).all()
    if not rows:
        raise ChatlogError(f"{keyspace}.{table} is empty")
    values = {k: v for k, v in rows[0]._asdict().items() if v is not None}
    insert = session.prepare(
        f"INSERT INTO {keyspace}.{table} ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})"
    )
    session.execute(insert, tuple(values.values()), timeout=60)
