"""Result files: the JSON document and the PNG next to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.results import figure, write_json


def test_write_json_makes_the_directory_and_keeps_unicode(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a" / "b" / "r.json", {"rate": 1.5, "name": "ñandú"}, indent=1)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {"rate": 1.5, "name": "ñandú"}
    assert "ñandú" in text
    assert text.endswith("}\n")


def test_figure_saves_a_png_when_the_block_ends(tmp_path: Path) -> None:
    path = tmp_path / "plots" / "r.png"
    with figure(path, 1, 2, figsize=(4, 2), dpi=50) as (_fig, (left, right)):
        left.plot([0, 1], [1, 2])
        right.bar(["a"], [1])
        assert not path.exists()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_saves_nothing_when_the_block_fails(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    path = tmp_path / "r.png"
    open_before = len(plt.get_fignums())
    with pytest.raises(KeyError), figure(path) as (_fig, _ax):
        raise KeyError("no such series")
    assert not path.exists()
    assert len(plt.get_fignums()) == open_before  # closed either way
