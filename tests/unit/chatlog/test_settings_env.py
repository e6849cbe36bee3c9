"""Unknown CHATLOG_* variables are reported, not silently ignored (issue 13, item 4)."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from core import settings_env
from core.errors import SettingsError
from core.settings import SETTINGS_CLASSES
from tests.unit.cli_runs import chatlog

REPO = Path(__file__).resolve().parents[3]


def test_every_settings_class_of_every_settings_module_is_known() -> None:
    classes = set(settings_env.settings_classes())
    modules = settings_env.settings_modules()
    assert {"core.settings", "ingest.settings", "ingest.irc.settings", "sink.settings"} <= set(modules)
    assert "chatlog.monitor.settings" in modules
    for name in modules:
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if issubclass(cls, BaseSettings) and cls.__module__ == name and not cls.__name__.startswith("_"):
                assert cls in classes, f"{name}.{cls.__name__} is not registered"


def test_known_names_come_from_every_package() -> None:
    known = settings_env.known_variables()
    assert {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS",
        "CHATLOG_CASSANDRA_HOSTS",
        "CHATLOG_STATE_DIR",
        "CHATLOG_INGEST_REPLICA",
        "CHATLOG_METRICS_PORT",
        "CHATLOG_STATUS_STALE_S",
        "CHATLOG_IRC_JOIN_RATE",
        "CHATLOG_SINK_WATERMARK",
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
    known = settings_env.known_variables()
    found: dict[str, str] = {}
    for package in ("schemas", "core", "ingest", "sink", "serve", "chatlog", "bench", "tests"):
        for path in (REPO / package).rglob("*.py"):
            for match in _DIRECT_READ.finditer(path.read_text(encoding="utf-8")):
                found[match.group(1) or match.group(2)] = str(path.relative_to(REPO))
    assert {"CHATLOG_TEST_KEEP_STACK", "CHATLOG_MAVEN_REPOSITORY"} <= set(found)
    assert {name: where for name, where in found.items() if name not in known} == {}


def test_unknown_variables_get_the_closest_known_name() -> None:
    known = settings_env.known_variables()
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


def test_strict_turns_the_warning_into_an_error() -> None:
    env = {"CHATLOG_CASANDRA_HOSTS": "db"}
    assert settings_env.check_environment(env) == [
        "unknown setting CHATLOG_CASANDRA_HOSTS (did you mean CHATLOG_CASSANDRA_HOSTS?): it is ignored"
    ]
    with pytest.raises(SettingsError, match=r"CHATLOG_CASANDRA_HOSTS.*CHATLOG_STRICT_SETTINGS"):
        settings_env.check_environment({**env, "CHATLOG_STRICT_SETTINGS": "true"})
    assert settings_env.check_environment({"CHATLOG_STRICT_SETTINGS": "1"}) == []
    with pytest.raises(SettingsError, match="CHATLOG_STRICT_SETTINGS"):
        settings_env.check_environment({"CHATLOG_STRICT_SETTINGS": "maybe"})


def test_the_command_line_warns_in_one_line_and_strict_exits_2() -> None:
    typo = {"CHATLOG_KAFKA_BOOTSTRAP_SERVER": "127.0.0.1:1"}
    warned = chatlog(["logs", "x", "--since", "²"], typo)
    assert warned.code == 2 and warned.stderr_lines == [
        "chatlog: warning: unknown setting CHATLOG_KAFKA_BOOTSTRAP_SERVER "
        "(did you mean CHATLOG_KAFKA_BOOTSTRAP_SERVERS?): it is ignored",
        warned.stderr_lines[1],
    ]
    assert warned.stderr_lines[1].startswith("chatlog: error: --since")
    strict = chatlog(["--help"], {**typo, "CHATLOG_STRICT_SETTINGS": "true"})
    assert strict.code == 2 and len(strict.stderr_lines) == 1
    assert "CHATLOG_KAFKA_BOOTSTRAP_SERVERS?" in strict.stderr_lines[0]


def test_the_base_settings_import_neither_ingest_nor_sink() -> None:
    code = (
        "import sys, core.settings, core.settings_env, schemas.cql\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ingest', 'sink'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    assert all(
        cls.__module__.split(".")[0] in ("core", "ingest", "sink", "serve", "chatlog")
        for cls in SETTINGS_CLASSES
    )
