"""core/settings_env.py: unknown CHATLOG_* variables are reported, not silently ignored (issue 13, item 4).

The classes come from the operator layer's catalog (chatlog/cli/schema.py); core never imports above it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from chatlog.cli.schema import settings_classes
from core import settings_env
from core.errors import SettingsError
from core.settings import SETTINGS_CLASSES, KafkaSettings

REPO = Path(__file__).resolve().parents[3]


def known() -> frozenset[str]:
    return settings_env.known_variables(settings_classes())


def test_known_names_come_from_every_package() -> None:
    known = settings_env.known_variables(settings_classes())
    assert {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS",
        "CHATLOG_CASSANDRA_HOSTS",
        "CHATLOG_STATE_DIR",
        "CHATLOG_INGEST_REPLICA",
        "CHATLOG_METRICS_PORT",
        "CHATLOG_STATUS_STALE_S",
        "CHATLOG_IRC_JOIN_RATE",
        "CHATLOG_SINK_DEDUP_WINDOW",
        "CHATLOG_MONITOR_WEB_PORT",
        "CHATLOG_STRICT_SETTINGS",
        "CHATLOG_TEST_KEEP_STACK",
        "CHATLOG_MAVEN_REPOSITORY",
    } <= known
    assert "CHATLOG_KAFKA_BOOTSTRAP_SERVER" not in known and "CHATLOG_CASANDRA_HOSTS" not in known


_DIRECT_READ = re.compile(
    r"""(?:environ|getenv)\W[^\n]*?["'](CHATLOG_[A-Z0-9_]+)["']|["'](CHATLOG_[A-Z0-9_]+)["']\s+(?:not\s+)?in\s+os\.environ"""
)


def test_every_variable_read_directly_from_the_environment_is_known() -> None:
    """A new direct read of a CHATLOG_* variable must be added to DIRECT_VARIABLES (or be a setting)."""
    known = settings_env.known_variables(settings_classes())
    found: dict[str, str] = {}
    for package in ("schemas", "core", "ingest", "sink", "serve", "chatlog", "bench", "tests"):
        for path in (REPO / package).rglob("*.py"):
            for match in _DIRECT_READ.finditer(path.read_text(encoding="utf-8")):
                found[match.group(1) or match.group(2)] = str(path.relative_to(REPO))
    assert {"CHATLOG_TEST_KEEP_STACK", "CHATLOG_MAVEN_REPOSITORY"} <= set(found)
    assert {name: where for name, where in found.items() if name not in known} == {}


def test_unknown_variables_get_the_closest_known_name() -> None:
    known = settings_env.known_variables(settings_classes())
    env = {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVER": "x:9092",
        "CHATLOG_CASANDRA_HOSTS": "db",
        "CHATLOG_ZZZZZZZZZZZZZZZZZZZZZZZZ": "1",
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": "x:9092",
        "PATH": "/bin",
    }
    assert settings_env.unknown_variables(env, known) == [
        "unknown setting CHATLOG_CASANDRA_HOSTS (did you mean CHATLOG_CASSANDRA_HOSTS?)",
        "unknown setting CHATLOG_KAFKA_BOOTSTRAP_SERVER (did you mean CHATLOG_KAFKA_BOOTSTRAP_SERVERS?)",
        "unknown setting CHATLOG_ZZZZZZZZZZZZZZZZZZZZZZZZ",
    ]


def test_a_cut_name_or_a_synonym_gets_the_name_it_meant() -> None:
    known = settings_env.known_variables(settings_classes())
    env = {"CHATLOG_CASSANDRA_PASS": "x", "CHATLOG_IRC_TOKEN": "y", "CHATLOG_KAFKA_SASL_USER": "z"}
    assert settings_env.unknown_variables(env, known) == [
        "unknown setting CHATLOG_CASSANDRA_PASS (did you mean CHATLOG_CASSANDRA_PASSWORD?)",  # not ..._SSL
        "unknown setting CHATLOG_IRC_TOKEN (did you mean CHATLOG_IRC_OAUTH?)",  # not ..._TLS
        "unknown setting CHATLOG_KAFKA_SASL_USER (did you mean CHATLOG_KAFKA_SASL_USERNAME?)",
    ]


def test_strict_turns_the_warning_into_an_error() -> None:
    env = {"CHATLOG_CASANDRA_HOSTS": "db"}
    classes = settings_classes()
    assert settings_env.check_environment(env, classes) == [
        "unknown setting CHATLOG_CASANDRA_HOSTS (did you mean CHATLOG_CASSANDRA_HOSTS?): it is ignored"
    ]
    with pytest.raises(SettingsError, match=r"CHATLOG_CASANDRA_HOSTS.*CHATLOG_STRICT_SETTINGS"):
        settings_env.check_environment({**env, "CHATLOG_STRICT_SETTINGS": "true"}, classes)
    assert settings_env.check_environment({"CHATLOG_STRICT_SETTINGS": "1"}, classes) == []
    with pytest.raises(SettingsError, match="CHATLOG_STRICT_SETTINGS"):
        settings_env.check_environment({"CHATLOG_STRICT_SETTINGS": "maybe"}, classes)


def test_the_given_classes_are_the_ones_checked() -> None:
    from ingest.settings import IngestSettings

    env = {"CHATLOG_INGEST_REPLICA": "1"}
    assert settings_env.check_environment(env, [IngestSettings]) == []
    [line] = settings_env.check_environment(env, [KafkaSettings])
    assert line.startswith("unknown setting CHATLOG_INGEST_REPLICA") and line.endswith(": it is ignored")
    assert settings_env.secret_variables([KafkaSettings]) == {
        "CHATLOG_KAFKA_SASL_PASSWORD",
        "CHATLOG_KAFKA_SSL_KEY_PASSWORD",
    }


def test_the_base_layer_imports_nothing_above_it_to_check_the_environment() -> None:
    """Without a catalog, the check knows the classes imported so far: core's own."""
    code = (
        "import sys, core.settings_env as env, core.redact\n"
        "lines = env.check_environment({'CHATLOG_KAFKA_BOOTSTRAP_SERVER': 'x', 'CHATLOG_HOME': '/x'})\n"
        "assert lines == ['unknown setting CHATLOG_KAFKA_BOOTSTRAP_SERVER (did you mean "
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS?): it is ignored'], lines\n"
        "core.redact.secret_values({})\n"
        "above = ('ingest', 'sink', 'serve', 'chatlog', 'bench')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in above)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_by_default_the_classes_are_the_registered_ones() -> None:
    settings_classes()  # the catalog imports every settings module
    assert settings_env.registered_classes() == SETTINGS_CLASSES
    assert settings_env.known_variables() == settings_env.known_variables(SETTINGS_CLASSES)


def test_a_removed_setting_is_an_error_naming_what_replaces_it_strict_or_not() -> None:
    from core.settings_env import REMOVED_VARIABLES

    for strict_value in ("false", "true"):
        with pytest.raises(SettingsError) as failure:
            settings_env.check_environment(
                {"CHATLOG_SINK_DEDUP": "spark", "CHATLOG_STRICT_SETTINGS": strict_value}
            )
        assert "CHATLOG_SINK_DEDUP was removed" in str(failure.value)
        assert "CHATLOG_SINK_DEDUP_WINDOW" in str(failure.value)
    assert settings_env.check_environment({"CHATLOG_SINK_DEDUP_WINDOW": "10 seconds"}) == []
    assert all(text and "\n" not in text for text in REMOVED_VARIABLES.values())
