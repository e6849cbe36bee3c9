"""Unframing on the executor: one record of :mod:`sink.driver.handover`'s framing back into its parts."""

from __future__ import annotations

NO_VALUE = b"n"
"""The flag of a Kafka record that had no value."""


def unframe(record: bytes | bytearray) -> tuple[bytes | bytearray | None, int, int]:
    """One framed record -> (value or None, Kafka partition, offset); a ``bytearray`` (the public
    ``DataFrame.rdd`` hand-over) gives a ``bytearray`` value."""
    head, _, value = record.partition(b"\n")
    partition, offset, flag = head.split(b" ")
    return (None if flag == NO_VALUE else value), int(partition), int(offset)
