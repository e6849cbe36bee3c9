"""Unframing a record of the JVM -> Python hand-over (sink/driver/handover.py) on the executor."""

from __future__ import annotations

import pytest

from sink.executor.unframe import unframe


def test_unframe_splits_the_header_off_and_keeps_the_value_bytes() -> None:
    assert unframe(b"3 17 n\n") == (None, 3, 17)
    assert unframe(b"0 5 v\n") == (b"", 0, 5)
    assert unframe(b"2 9 v\nab\ncd ef") == (b"ab\ncd ef", 2, 9)


def test_the_public_hand_over_s_bytearrays_unframe_the_same() -> None:
    assert unframe(bytearray(b"2 9 v\nab\ncd ef")) == (b"ab\ncd ef", 2, 9)
    assert unframe(bytearray(b"3 17 n\n")) == (None, 3, 17)


def test_a_malformed_frame_fails_loudly() -> None:
    with pytest.raises(ValueError):
        unframe(b"no header")
