"""lab.bench.keyspace_disk's pure parts: the tables it measures are the keyspace's line tables, and the bytes
on disk are read from Cassandra's files as they lie in its data directory."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import pytest

from core.errors import ChatlogError
from lab.bench.keyspace_disk import (
    LOG_TABLES,
    compression_info,
    disk_usage,
    keyspace_files,
    table_dir,
    table_files,
    write_one_again,
)
from store.layout import OLD_TABLES
from store.schema import statements

REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


def _utf(text: str) -> bytes:
    return struct.pack(">H", len(text)) + text.encode()


def _compression_info(compressor: str, data_length: int, chunk: int = 65536) -> bytes:
    header = _utf(compressor) + struct.pack(">i", 1) + _utf("chunk_length_in_kb") + _utf("64")
    chunks = -(-data_length // chunk)
    return header + struct.pack(">iiqi", chunk, chunk, data_length, chunks) + b"\0" * 8 * chunks


def _sstable(directory: Path, generation: int, data_bytes: int, data_length: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"nb-{generation}-big-Data.db").write_bytes(b"x" * data_bytes)
    info = directory / f"nb-{generation}-big-CompressionInfo.db"
    info.write_bytes(_compression_info("LZ4Compressor", data_length))


def test_the_tables_measured_are_the_keyspaces_line_tables_and_their_indexes() -> None:
    created = {
        m.group(1)
        for s in statements("ks", REPLICATION)
        if (m := re.match(r"CREATE TABLE IF NOT EXISTS ks\.(\w+) ", s))
    }
    assert set(LOG_TABLES) <= created
    assert len(set(LOG_TABLES)) == len(LOG_TABLES) == 5
    assert not set(OLD_TABLES) & set(LOG_TABLES)
    assert "layout" not in LOG_TABLES and not any(t.startswith("coverage") for t in LOG_TABLES)


def test_compression_info_reads_the_uncompressed_length(tmp_path: Path) -> None:
    header = _utf("ZstdCompressor") + struct.pack(">i", 1) + _utf("compression_level") + _utf("3")
    path = tmp_path / "nb-1-big-CompressionInfo.db"
    path.write_bytes(header + struct.pack(">iiqi", 65536, 65536, 200_000, 4) + b"\0" * 32)
    assert compression_info(path) == {"compressor": "ZstdCompressor", "chunk": 65536, "data_length": 200_000}
    path.write_bytes(header + struct.pack(">iiqi", 65536, 65536, 200_000, 40))
    with pytest.raises(ValueError, match="chunks"):
        compression_info(path)


def test_disk_usage_sums_the_data_files_of_each_table(tmp_path: Path) -> None:
    blocks, days = LOG_TABLES[0], LOG_TABLES[2]
    _sstable(tmp_path / "ks" / f"{blocks}-0a1b", 1, 6_000, 20_000)
    _sstable(tmp_path / "ks" / f"{blocks}-0a1b", 2, 2_000, 5_000)
    _sstable(tmp_path / "ks" / f"{days}-77ee", 1, 100, 300)
    (tmp_path / "other" / f"{blocks}-ffff").mkdir(parents=True)  # another keyspace's table: not counted
    usage = disk_usage(tmp_path, "ks", messages=100, raw_mean=400.0)
    assert list(usage["tables"]) == list(LOG_TABLES)
    assert usage["tables"][blocks] == {
        "sstables": 2,
        "compressor": ["LZ4Compressor"],
        "data_db_bytes": 8_000,
        "uncompressed_bytes": 25_000,
        "bytes_per_message": 80.0,
    }
    assert usage["tables"][days]["bytes_per_message"] == 1.0
    assert usage["tables"][LOG_TABLES[1]]["sstables"] == 0  # not flushed yet: no directory
    assert (usage["data_db_bytes"], usage["bytes_per_message"], usage["ratio_to_raw_line"]) == (
        8_100,
        81.0,
        0.203,
    )
    with pytest.raises(ValueError, match="positive"):
        disk_usage(tmp_path, "ks", messages=0, raw_mean=400.0)


def test_the_files_of_a_table_and_of_a_keyspace(tmp_path: Path) -> None:
    table = LOG_TABLES[0]
    assert table_dir(tmp_path, "ks", table) is None and table_files(tmp_path, "ks", table) == ()
    assert keyspace_files(tmp_path, "ks") == ()
    _sstable(tmp_path / "ks" / f"{table}-0a1b", 1, 10, 10)
    (tmp_path / "ks" / f"{table}-0a1b" / "snapshots" / "s1").mkdir(parents=True)
    (tmp_path / "ks" / f"{table}-0a1b" / "snapshots" / "s1" / "nb-1-big-Data.db").write_bytes(b"old")
    assert table_dir(tmp_path, "ks", table) == tmp_path / "ks" / f"{table}-0a1b"
    assert table_files(tmp_path, "ks", table) == (
        "nb-1-big-CompressionInfo.db",
        "nb-1-big-Data.db",
        "snapshots",
    )
    assert [name for name, _size in keyspace_files(tmp_path, "ks")] == [
        f"{table}-0a1b/nb-1-big-CompressionInfo.db",
        f"{table}-0a1b/nb-1-big-Data.db",
    ]  # snapshots left out


class _Row:
    def __init__(self, **cells: Any) -> None:
        self.cells = cells

    def _asdict(self) -> dict[str, Any]:
        return dict(self.cells)


class _Session:
    def __init__(self, rows: list[_Row]) -> None:
        self.rows = rows
        self.prepared: list[str] = []
        self.executed: list[tuple[Any, Any]] = []

    def execute(self, statement: Any, params: Any = None, timeout: float = 0) -> Any:
        self.executed.append((statement, params))
        rows = self.rows

        class _Result:
            def all(self) -> list[_Row]:
                return rows

        return _Result()

    def prepare(self, cql: str) -> str:
        self.prepared.append(cql)
        return cql


def test_one_row_is_written_again_with_the_same_cells() -> None:
    session = _Session([_Row(channel_key="1", day=19_800, part=0, note=None)])
    write_one_again(session, "ks", "t")
    assert session.prepared == ["INSERT INTO ks.t (channel_key, day, part) VALUES (?, ?, ?)"]
    assert session.executed[-1] == (session.prepared[0], ("1", 19_800, 0))
    with pytest.raises(ChatlogError, match=r"ks\.t is empty"):
        write_one_again(_Session([]), "ks", "t")
