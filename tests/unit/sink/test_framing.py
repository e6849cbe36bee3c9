"""The framing of a micro-batch's rows handed from the JVM to Python as bytes (sink/framing.py), through the
private API (the only hand-off: the public ``DataFrame.rdd`` path was removed); unframing them."""

from __future__ import annotations

from typing import Any

import pytest

from sink.framing import records, unframe

ROWS: list[tuple[bytes | None, int, int]] = [
    (b'{"message_id": "m1"}', 0, 0),
    (None, 3, 17),  # a Kafka record without a value
    (b"", 4, 18),  # an empty value is not a missing one
    (b"\xff\xfe not utf-8 \n with a newline and spaces ", 11, 2**40),
    ("caf\u00e9 \U0001f600".encode(), 7, 5),
]


@pytest.mark.spark
def test_rows_reach_python_as_they_were_in_the_jvm(spark: Any) -> None:
    df = spark.createDataFrame(ROWS, "value binary, partition int, offset long").repartition(3)
    rdd, dataset = records(df)
    got = rdd.map(unframe).map(lambda r: (None if r[0] is None else bytes(r[0]), r[1], r[2])).collect()
    assert sorted(got, key=lambda r: r[1]) == sorted(ROWS, key=lambda r: r[1])
    assert dataset is not None


def test_unframe_splits_the_header_off_and_keeps_the_value_bytes() -> None:
    assert unframe(b"3 17 n\n") == (None, 3, 17)
    assert unframe(b"0 5 v\n") == (b"", 0, 5)
    assert unframe(b"2 9 v\nab\ncd ef") == (b"ab\ncd ef", 2, 9)


def test_a_malformed_frame_fails_loudly() -> None:
    with pytest.raises(ValueError):
        unframe(b"no header")
