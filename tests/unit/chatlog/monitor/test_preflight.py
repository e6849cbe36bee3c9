"""chatlog/monitor/preflight.py: the monitor's faust credentials from the Kafka settings, and its data
directory made (or refused in one line) before faust starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatlog.monitor.preflight import broker_credentials
from chatlog.monitor.settings import MonitorSettings
from core.errors import ChatlogError, SettingsError
from core.settings import KafkaSettings, load
from lab.stack.security import TlsFiles
from tests.unit.core.tls_settings import SECRET, sasl_ssl


def test_monitor_gets_scram_credentials_and_the_ca(stack_tls: TlsFiles) -> None:
    settings = load(
        MonitorSettings, **sasl_ssl(stack_tls.ca).model_dump(include=set(KafkaSettings.model_fields))
    )
    creds = broker_credentials(settings)
    assert (creds.username, creds.password, creds.mechanism.value) == ("chatlog", SECRET, "SCRAM-SHA-512")
    assert creds.ssl_context.get_ca_certs()
    assert SECRET not in repr(creds)


def test_the_data_directory_is_made_before_faust_starts_or_said_in_one_line(tmp_path: Path) -> None:
    from chatlog.monitor.preflight import check_data_dir

    made = tmp_path / "a" / "b"
    check_data_dir(load(MonitorSettings, monitor_data_dir=made))
    assert made.is_dir()
    check_data_dir(load(MonitorSettings, monitor_data_dir=made))  # again: it exists
    file = tmp_path / "file"
    file.write_text("")
    for path, why in ((file, "exists and is not a directory"), (file / "sub", "cannot create")):
        with pytest.raises(ChatlogError) as info:
            check_data_dir(load(MonitorSettings, monitor_data_dir=path))
        assert str(info.value).startswith("setting monitor_data_dir (CHATLOG_MONITOR_DATA_DIR): ")
        assert why in str(info.value) and "\n" not in str(info.value)


def test_a_data_directory_faust_would_format_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="CHATLOG_MONITOR_DATA_DIR"):
        load(MonitorSettings, monitor_data_dir="/tmp/{conf.id}")
