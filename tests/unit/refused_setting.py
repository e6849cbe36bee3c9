"""What the settings tests check of a refused value: loading fails in one line that names the variable."""

from __future__ import annotations

import pytest
from pydantic_settings import BaseSettings

from core.errors import SettingsError
from core.settings import load


def refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, cls: type[BaseSettings], variable: str, value: str
) -> str:
    """The error of loading ``cls`` with ``variable`` set to ``value``, checked to be one line naming it."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as exc:
        load(cls)
    message = str(exc.value)
    assert variable in message and "\n" not in message
    return message
