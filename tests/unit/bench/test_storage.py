"""The storage benchmark's pure parts: the corpus is realistic, the partition-bound arithmetic is right."""

from __future__ import annotations

import itertools
import os
import struct
from pathlib import Path

import pytest

from bench.storage import (
    CHANNEL_MSGS_PER_S,
    MODERATOR_MSGS_PER_S,
    T0_MS,
    USER_KEYS,
    _columns_of,
    _month_part,
    coarsest_within,
    compression_info,
    corpus,
    corpus_stats,
    cpu_seconds,
    fixed_window,
    layouts,
    month_parts,
    partition_bounds,
    partition_mib,
    row_bytes_in_partition,
    rows_of,
    strip_derivable,
)


def test_corpus_is_realistic_twitch_chat() -> None:
    lines = corpus(20_000)
    stats = corpus_stats(lines)
    assert 470 <= stats["raw_bytes_mean"] <= 540
    assert stats["channels"] == 3
    assert stats["messages_per_chatter_median"] <= 3 < stats["messages_per_chatter_mean"] < 12
    assert stats["messages_per_chatter_max"] > 100  # a few chatters say much
    assert 0.15 < stats["chatters_with_one_message"] < 0.6
    for tag in ("badge-info=", "badges=", "color=", "display-name=", "emotes=", "first-msg=", "flags=", "id=",
                "mod=", "returning-chatter=", "room-id=", "subscriber=", "tmi-sent-ts=", "turbo=", "user-id=",
                "user-type="):  # fmt: skip
        assert all(f";{tag}" in line or line.startswith(f"@{tag}") for line in lines[:500]), tag
    assert sum("client-nonce=" in line for line in lines) > 0.8 * len(lines)
    assert sum("reply-parent-msg-id=" in line for line in lines) > 0.05 * len(lines)
    rows = rows_of(lines)  # raises unless every line is a chat line with a user-id and a room-id
    assert all(r.event.kind == "PRIVMSG" and r.event.bad_sent_ts is None for r in rows)
    sent = [r.sent_at for r in rows]
    assert sent[0] >= T0_MS and sent[-1] < T0_MS + 86_400_000 + 1000  # one day, in time order (1 s jitter)
    assert max(a - b for a, b in itertools.pairwise(sent)) < 1000


def test_corpus_is_the_same_for_a_seed_and_differs_across_seeds() -> None:
    assert corpus(500) == corpus(500)
    assert corpus(500) != corpus(500, seed=1)
    with pytest.raises(ValueError, match="positive"):
        corpus(0)


def test_partition_arithmetic_at_the_moderator_limit() -> None:
    # 100 messages / 30 s for 8 days (a quarter of a 31-day month) of 40-byte pointer rows
    assert partition_mib(40, MODERATOR_MSGS_PER_S, 8 * 86_400) == pytest.approx(
        40 * 100 / 30 * 8 * 86_400 / 2**20
    )
    bounds = {b["key"]: b for b in partition_bounds(40, MODERATOR_MSGS_PER_S, USER_KEYS)}
    assert bounds["month/1"]["rows"] == 100 * 31 * 86_400 // 30
    assert not bounds["month/1"]["within_limit"]  # 8.9M rows x 40 B = 341 MiB
    assert bounds["month/4"]["within_limit"]  # 2.3M rows x 40 B = 88 MiB
    assert coarsest_within(list(bounds.values()))["key"] == "month/4"  # type: ignore[index]
    # a full copy of a 500-byte line fits only in half-day partitions
    full = partition_bounds(500, MODERATOR_MSGS_PER_S, USER_KEYS)
    assert coarsest_within(full)["key"] == "12h"  # type: ignore[index]
    assert coarsest_within(partition_bounds(10**9, 1.0, USER_KEYS)) is None


def test_channel_buckets_at_300_per_second() -> None:
    five_min = fixed_window("5min", 300)
    assert five_min.month_reads == 31 * 288
    assert partition_mib(550, CHANNEL_MSGS_PER_S, five_min.span_s) == pytest.approx(47.2, abs=0.1)
    assert partition_mib(550, CHANNEL_MSGS_PER_S, 900) > 100


def test_user_month_reads_of_each_key() -> None:
    assert [month_parts(p).month_reads for p in (1, 2, 4)] == [1, 2, 4]
    assert month_parts(4).span_s == 8 * 86_400
    assert fixed_window("day", 86_400).month_reads == 31
    assert fixed_window("week", 7 * 86_400).month_reads == 6  # a month can start on a week's last day


def test_month_part_splits_a_calendar_month_in_four() -> None:
    day = 86_400_000
    nov_1 = 1_793_491_200_000  # 2026-11-01T00:00:00Z
    parts = [_month_part(nov_1 + d * day) for d in range(30)]
    assert parts[0] == 2026_11_0 and parts[-1] == 2026_11_3
    assert [parts.count(2026_11_0 + p) for p in range(4)] == [8, 8, 8, 6]
    assert _month_part(nov_1 - 1) == 2026_10_3


def test_row_bytes_in_partition_takes_partition_headers_out() -> None:
    assert row_bytes_in_partition(10_000, 100, 10, 24) == pytest.approx((10_000 - 10 * 40) / 100)
    with pytest.raises(ValueError):
        row_bytes_in_partition(1, 0, 1, 1)


def test_strip_derivable_removes_only_values_a_reader_can_restore() -> None:
    line = corpus(1)[0]
    event = rows_of([line])[0].event  # received just after it was sent: tmi-sent-ts is believed
    stripped = strip_derivable(line, event.message_id, event.sent_at)
    assert ";id=;" in stripped and ";tmi-sent-ts=;" in stripped
    assert len(stripped) == len(line) - len(event.message_id) - len(str(event.sent_at))
    restored = stripped.replace(";id=;", f";id={event.message_id};").replace(
        ";tmi-sent-ts=;", f";tmi-sent-ts={event.sent_at};"
    )
    assert restored == line
    assert strip_derivable(line, "another-id", event.sent_at) == line


def test_compression_info_reads_the_uncompressed_length(tmp_path: Path) -> None:
    def utf(text: str) -> bytes:
        return struct.pack(">H", len(text)) + text.encode()

    header = utf("ZstdCompressor") + struct.pack(">i", 1) + utf("compression_level") + utf("3")
    path = tmp_path / "nb-1-big-CompressionInfo.db"
    path.write_bytes(header + struct.pack(">iiqi", 65536, 65536, 200_000, 4) + b"\0" * 32)
    assert compression_info(path) == {"compressor": "ZstdCompressor", "chunk": 65536, "data_length": 200_000}
    path.write_bytes(header + struct.pack(">iiqi", 65536, 65536, 200_000, 40))
    with pytest.raises(ValueError, match="chunks"):
        compression_info(path)


def test_layouts_write_what_they_say() -> None:
    candidates = layouts()
    assert {"A", "B", "C16", "C64", "D16", "D64", "E64", "E64s"} <= set(candidates)
    today = {t.name: t for t in candidates["A"].tables}
    assert set(today) == {"messages_by_channel", "channel_buckets", "messages_by_user"}
    assert {"raw", "tags", "text"} <= set(today["messages_by_user"].columns)
    row = rows_of(corpus(3))[0]
    by_user = today["messages_by_user"]
    values = dict(zip(by_user.columns, by_user.values(row), strict=True))
    assert values["raw"] == row.raw and values["text"] == row.event.text and values["tags"] == row.event.tags
    assert by_user.partition_key(row) == (row.event.channel, row.event.user_login, row.bucket)
    assert today["channel_buckets"].once_per_key and not by_user.once_per_key
    pointer = {t.name: t for t in candidates["D64"].tables}["chat_by_user"]
    assert "raw" not in pointer.columns and len(pointer.values(row)) == len(pointer.columns)
    assert "ZstdCompressor" in pointer.ddl and "'chunk_length_in_kb': 64" in pointer.ddl
    copy = {t.name: t for t in candidates["C16"].tables}["chat_by_user"]
    assert copy.values(row)[-1] == row.raw


def test_layout_a_keeps_its_own_copy_of_the_tables_before_issue_17() -> None:
    from schemas.cql import statements

    live = " ".join(statements("ks", "{'class': 'SimpleStrategy', 'replication_factor': 1}"))
    for table in layouts()["A"].tables:
        assert f"ks.{table.name} " not in live  # gone from the schema: layout A does not read it from there
        assert table.ddl.startswith(f"CREATE TABLE IF NOT EXISTS {{ks}}.{table.name} (")
        assert set(_columns_of(table.ddl)) == set(table.columns)
    assert "frozen<map<text, text>>" in {t.name: t for t in layouts()["A"].tables}["messages_by_channel"].ddl


def test_columns_of_a_ddl_with_a_frozen_map() -> None:
    ddl = "CREATE TABLE k.t (a text, tags frozen<map<text, text>>, b int, PRIMARY KEY (a))"
    assert _columns_of(ddl) == ["a", "tags", "b"]


def test_cpu_seconds_of_this_process() -> None:
    spent = cpu_seconds(os.getpid())
    assert spent is not None and spent > 0
    assert cpu_seconds(None) is None
