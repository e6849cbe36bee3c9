"""chatlog/monitor/preflight.py: the monitor's faust credentials from the Kafka settings."""

from __future__ import annotations

from chatlog.monitor.preflight import broker_credentials
from chatlog.monitor.settings import MonitorSettings
from chatlog.stack.security import TlsFiles
from core.settings import KafkaSettings, load
from tests.unit.core.tls_settings import SECRET, sasl_ssl


def test_monitor_gets_scram_credentials_and_the_ca(stack_tls: TlsFiles) -> None:
    settings = load(
        MonitorSettings, **sasl_ssl(stack_tls.ca).model_dump(include=set(KafkaSettings.model_fields))
    )
    creds = broker_credentials(settings)
    assert (creds.username, creds.password, creds.mechanism.value) == ("chatlog", SECRET, "SCRAM-SHA-512")
    assert creds.ssl_context.get_ca_certs()
    assert SECRET not in repr(creds)
