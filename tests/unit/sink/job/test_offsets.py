"""The per-partition offsets of a backfill's time range (pure logic; the real lookup is tested on Kafka)."""

from __future__ import annotations

import json

from sink.job.offsets import NO_OFFSET, PartitionRange, TopicRange, resolve


def test_a_partition_with_nothing_after_the_start_is_read_as_empty() -> None:
    ranges = resolve([0, 1, 2], {0: 10, 1: 5, 2: 0}, {0: 4, 1: NO_OFFSET, 2: NO_OFFSET}, None)
    assert ranges == (PartitionRange(0, 4, 10), PartitionRange(1, 5, 5), PartitionRange(2, 0, 0))
    assert sum(r.records for r in ranges) == 6


def test_the_end_time_bounds_each_partition_and_never_precedes_the_start() -> None:
    ranges = resolve([1, 0], {0: 10, 1: 8}, {0: 4, 1: 6}, {0: 7, 1: NO_OFFSET})
    assert ranges == (PartitionRange(0, 4, 7), PartitionRange(1, 6, 8))
    # an end lookup below the start (records out of time order) gives an empty range, not a negative one
    assert resolve([0], {0: 10}, {0: 6}, {0: 3}) == (PartitionRange(0, 6, 6),)


def test_offsets_past_the_end_offset_are_clamped() -> None:
    assert resolve([0], {0: 3}, {0: 9}, {0: 12}) == (PartitionRange(0, 3, 3),)


def test_spark_options_assign_every_partition_with_exact_offsets() -> None:
    span = TopicRange("t.messages", (PartitionRange(0, 4, 7), PartitionRange(3, 2, 2)))
    opts = span.spark_options()
    assert json.loads(opts["assign"]) == {"t.messages": [0, 3]}
    assert json.loads(opts["startingOffsets"]) == {"t.messages": {"0": 4, "3": 2}}
    assert json.loads(opts["endingOffsets"]) == {"t.messages": {"0": 7, "3": 2}}
    assert span.records == 3
