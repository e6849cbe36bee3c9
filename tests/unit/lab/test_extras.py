"""A missing bench extra is one line that says how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lab import extras
from lab.results import figure


def test_an_installed_extra_passes() -> None:
    extras.require_plotting()
    extras.require_cpu_accounting()


def test_a_missing_module_is_one_line_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # what `import psutil` sees when it is not installed
    with pytest.raises(extras.MissingExtra) as caught:
        extras.require_cpu_accounting()
    message = str(caught.value)
    assert "\n" not in message
    assert "no psutil" in message
    assert message.endswith("pip install -e '.[bench]'")


def test_a_plot_without_matplotlib_fails_before_drawing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with (
        pytest.raises(extras.MissingExtra, match="plotting needs the bench extra"),
        figure(tmp_path / "x.png"),
    ):
        pass
    assert not (tmp_path / "x.png").exists()
