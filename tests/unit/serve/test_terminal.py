"""serve.terminal: the fast path (text str.isprintable() accepts) never lets a control through."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from serve.terminal import _CONTROLS, _TABLE, escape_controls


def test_every_escaped_character_is_one_isprintable_refuses() -> None:
    for code in _CONTROLS:
        text = f"ok {chr(code)} ok"
        assert not text.isprintable()
        assert escape_controls(text) == f"ok {_TABLE[code]} ok"


@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from([chr(c) for c in _CONTROLS])))
def test_it_is_the_translation_of_every_control(text: str) -> None:
    assert escape_controls(text) == text.translate(_TABLE)
