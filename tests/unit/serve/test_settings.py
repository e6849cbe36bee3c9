"""serve/settings.py: how many worker processes ``chatlog serve`` runs (``CHATLOG_SERVE_WORKERS``)."""

from __future__ import annotations

import os

import pytest

from core.errors import SettingsError
from core.settings import load
from serve.settings import ServeSettings


def test_workers_default_to_one_per_cpu_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHATLOG_SERVE_WORKERS", raising=False)
    settings = load(ServeSettings)
    assert settings.serve_workers == 0
    assert settings.worker_count() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert settings.worker_count() == 3


@pytest.mark.parametrize("count", [1, 4])
def test_workers_given_are_the_count(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setenv("CHATLOG_SERVE_WORKERS", str(count))
    assert load(ServeSettings).worker_count() == count
    monkeypatch.delenv("CHATLOG_SERVE_WORKERS")
    assert load(ServeSettings, serve_workers=count).worker_count() == count


@pytest.mark.parametrize("value", ["-1", "two", "1.5", "100000"])
def test_a_bad_worker_count_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CHATLOG_SERVE_WORKERS", value)
    with pytest.raises(SettingsError) as info:
        load(ServeSettings)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("setting serve_workers (CHATLOG_SERVE_WORKERS): ")
    assert repr(value) in message


def test_a_bad_workers_option_names_the_option() -> None:
    with pytest.raises(SettingsError, match=r"^option --workers: .*greater than or equal to 0"):
        load(ServeSettings, serve_workers=-2, options={"serve_workers": "--workers"})
