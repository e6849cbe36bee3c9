"""Hypothesis strategies of IRC line pieces that the generated-line tests of every package draw from."""

from __future__ import annotations

from hypothesis import strategies as st

TAG_VALUE = st.lists(
    st.sampled_from(
        ["x", "1", "\\s", "\\:", "\\\\", "\\", "\\r", "\\n", "\\t", "\\x", "=", '"', "é", "\x01", "\x00",
         "\x7f", "\u2028", "\ud7ff", "😀", "<", "/"]
    ),
    max_size=6,
).map("".join)  # fmt: skip
"""A message tag's value: escapes (known, unknown, a lone backslash), control characters and other
characters a parser or a JSON encoder may trip on."""
