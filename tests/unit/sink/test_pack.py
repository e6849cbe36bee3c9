"""sink.pack without Cassandra: a partition's rows merged with its old frame (clustering order, a time and id
once, a row's values over the frame's), and the one line a run prints."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from schemas.packed_month import pack
from sink.pack import PackReport, _merged

V4 = "00000000-0000-4000-8000-00000000000{}"
V1 = str(uuid.UUID(int=(1 << 76) | 5))  # a version-1 (time) uuid: before every v4 of the same millisecond


def _row(sent: int, mid: str, line: str, received: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(sent_ms=sent, mid=mid, line=line, received_ms=received)


def test_rows_and_an_old_frame_merge_in_clustering_order_once_each() -> None:
    old = pack([(1_000, V4.format(1), "old a", 1_001), (3_000, V4.format(3), "old c", None)])
    rows = [
        _row(2_000, V4.format(2), "late b"),
        _row(3_000, V4.format(3), "c again", 3_005),
        _row(1_000, V1, "v1"),
    ]
    assert _merged(rows, old) == [
        (1_000, V1, "v1", None),  # Cassandra's order: the uuid's version first
        (1_000, V4.format(1), "old a", 1_001),
        (2_000, V4.format(2), "late b", None),
        (3_000, V4.format(3), "c again", 3_005),  # the row written again stands for the frame's copy
    ]


def test_rows_alone_keep_a_missing_line_as_empty() -> None:
    assert _merged([_row(5, V4.format(5), None)], None) == [(5, V4.format(5), "", None)]  # type: ignore[arg-type]


def test_the_summary_names_what_was_left_and_why() -> None:
    report = PackReport(months=7, packed=4, rows=1_200, frame_bytes=2_500_000)
    report.skipped["recent"] = 2
    report.skipped["spilled"] = 1
    assert report.summary() == (
        "packed 4 of 7 ended user-month(s): 1200 row(s) into 2.5 MB of frames; left as they are: "
        "2 recent, 1 spilled"
    )
    assert PackReport().summary().endswith("left as they are: none")
