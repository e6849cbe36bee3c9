"""Ingest settings: worker ids that stay valid as IRC nick prefixes, group ids, one-line errors."""

from __future__ import annotations

import re

import pytest

from core.errors import SettingsError
from core.settings import load
from ingest.settings import IngestSettings, default_worker_id


def test_group_id_and_worker_id() -> None:
    s = load(IngestSettings, ingest_replica=2, ingest_worker_id="pod-7", ingest_group_prefix="x")
    assert s.group_id == "x-r2" and s.worker_id == "pod-7"
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9\-]*-\d+", default_worker_id())
    assert load(IngestSettings).worker_id == default_worker_id()


@pytest.mark.parametrize("bad", ["a.b", "-x", "", "x" * 65, "a b"])
def test_bad_worker_ids_are_one_line_errors(bad: str) -> None:
    with pytest.raises(SettingsError) as exc:
        load(IngestSettings, ingest_worker_id=bad)
    assert "CHATLOG_INGEST_WORKER_ID" in str(exc.value) and "\n" not in str(exc.value)


def test_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_INGEST_HANDOFF_TIMEOUT_S", "2.5")
    monkeypatch.setenv("CHATLOG_METRICS_PORT", "0")
    monkeypatch.setenv("CHATLOG_INGEST_GROUP_PROTOCOL", "classic")
    s = load(IngestSettings)
    assert (s.ingest_handoff_timeout_s, s.metrics_port, s.ingest_group_protocol) == (2.5, 0, "classic")
    monkeypatch.setenv("CHATLOG_INGEST_GROUP_PROTOCOL", "eager")
    with pytest.raises(SettingsError):
        load(IngestSettings)
