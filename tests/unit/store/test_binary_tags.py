"""store/binary_tags.py: the random tag values of a line kept as bytes, given back exactly."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from store.binary_tags import TAGS, Column, put_back, take

NONCE = "0123456789abcdef0123456789abcdef"
PARENT = "9d3a7f1e-4b2c-4d5e-8f90-a1b2c3d4e5f6"

_KEYS = st.sampled_from([key for key, _ in TAGS] + ["id", "badges", "client-nonc", "xclient-nonce", ""])
_VALUES = st.sampled_from(
    [NONCE, NONCE.upper(), NONCE[:31], NONCE + "0", PARENT, PARENT.upper(), PARENT.replace("-", ""), ""]
) | st.text(alphabet="0123456789abcdef-=; ", max_size=40)
_ELEMENT = st.tuples(_KEYS, st.none() | _VALUES).map(
    lambda kv: kv[0] if kv[1] is None else f"{kv[0]}={kv[1]}"
)


@st.composite
def _heads(draw: st.DrawFn) -> str:
    """A tag section of elements whose keys and values are often the tags' (canonical or not), then a
    prefix, or any text."""
    if draw(st.booleans()):
        return draw(st.text(max_size=80))
    section = ";".join(draw(st.lists(_ELEMENT, max_size=6)))
    return f"@{section} :u!u@u PRIVMSG #c :" + draw(st.sampled_from(["", "client-nonce=" + NONCE]))


@settings(max_examples=500, deadline=None)
@given(st.lists(_heads(), max_size=20))
@example([f"@client-nonce={NONCE};client-nonce={NONCE} :x", f"!@client-nonce={NONCE} :x"])
@example([f"@client-nonce;client-nonce={NONCE} :x", f"@a=1 :x client-nonce={NONCE}"])
def test_what_is_taken_is_put_back_exactly(heads: list[str]) -> None:
    taken, columns = take(heads)
    assert put_back(taken, columns) == heads
    assert len(columns) == len(TAGS)
    for column in columns:
        present = sum(bin(b).count("1") for b in column.present)
        assert len(column.values) == 16 * present
        assert len(column.present) == (len(heads) + 7) // 8


def test_a_twitch_lines_nonce_and_reply_ids_leave_its_head_and_the_rest_stays() -> None:
    head = f"@client-nonce={NONCE};reply-parent-msg-id={PARENT};reply-thread-parent-msg-id={PARENT};x=1 :u"
    (taken,), (nonce, parent, thread) = take([head])
    assert taken == "@client-nonce=;reply-parent-msg-id=;reply-thread-parent-msg-id=;x=1 :u"
    assert nonce == Column(b"\x01", bytes.fromhex(NONCE))
    assert parent == thread == Column(b"\x01", uuid.UUID(PARENT).bytes)


def test_only_the_first_element_of_a_key_and_only_a_canonical_value_is_taken() -> None:
    heads = [
        f"@client-nonce={NONCE.upper()};client-nonce={NONCE} :u",  # the first is not canonical: none
        f"@reply-parent-msg-id={PARENT.replace('-', '')} :u",
        f"@a=1 :u PRIVMSG #c :client-nonce={NONCE}",  # in the text, not the tags
        f"!@client-nonce={NONCE} :u",  # a verbatim stored line
    ]
    taken, columns = take(heads)
    assert taken == heads
    assert all(column.values == b"" for column in columns)


@pytest.mark.parametrize(
    "bad",
    [
        lambda columns: columns[:2],
        lambda columns: [Column(b"\x01", b"\x00" * 15), *columns[1:]],
        lambda columns: [Column(b"", b""), *columns[1:]],
    ],
)
def test_columns_that_do_not_fit_the_heads_are_a_value_error(
    bad: Callable[[list[Column]], list[Column]],
) -> None:
    taken, columns = take([f"@client-nonce={NONCE} :u"])
    with pytest.raises(ValueError):
        put_back(taken, bad(columns))


def test_a_value_for_a_head_without_its_empty_tag_is_a_value_error() -> None:
    _, columns = take([f"@client-nonce={NONCE} :u"])
    with pytest.raises(ValueError, match="no empty client-nonce"):
        put_back(["@x=1 :u"], columns)
