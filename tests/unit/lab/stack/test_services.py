"""lab/stack/services.py: the KRaft cluster id we format Kafka storage with never looks like an option; the
JVM options of the stack's Kafka and Cassandra come from the settings."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from core import maven
from core.settings import StackSettings
from lab.stack import services


def test_an_id_that_would_start_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    dashed = uuid.UUID(bytes=b"\xf8" + b"\x00" * 15)  # URL-safe base64 of 0xf8... starts with "-"
    plain = uuid.UUID(bytes=b"\x10" * 16)
    assert base64.urlsafe_b64encode(dashed.bytes).startswith(b"-")
    draws = iter([dashed, plain])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))  # the module services draws from

    cluster_id = services.new_cluster_id()

    assert cluster_id == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")


def test_ids_are_22_url_safe_characters_for_16_bytes() -> None:
    for _ in range(2000):
        cluster_id = services.new_cluster_id()
        assert len(cluster_id) == 22
        assert not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def _commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **update: str) -> list[list[str]]:
    """The command lines of the stack's Kafka and Cassandra, before the class each one runs."""
    monkeypatch.setattr(services, "java", lambda: "/usr/bin/java")
    for bundle in (maven.KAFKA, maven.CASSANDRA):
        lib = bundle.lib_dir(tmp_path)
        lib.mkdir(parents=True)
        (lib / "a.jar").touch()
    settings = StackSettings(state_dir=tmp_path / "state", cache_dir=tmp_path, **update)  # type: ignore[arg-type]
    kafka, cassandra = services.Kafka(settings).command(), services.Cassandra(settings).command()
    return [
        kafka[: kafka.index("kafka.Kafka")],
        cassandra[: cassandra.index("org.apache.cassandra.service.CassandraDaemon")],
    ]


def test_kafka_and_cassandra_compile_with_c1_only_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for command in _commands(tmp_path, monkeypatch):
        assert command.count("-XX:TieredStopAtLevel=1") == 1


def test_empty_options_leave_the_jvm_its_tiered_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for command in _commands(tmp_path, monkeypatch, stack_java_options=""):
        assert not [arg for arg in command if arg.startswith("-XX:TieredStopAtLevel")]
        assert command[0] == "/usr/bin/java"


def test_options_are_split_as_a_shell_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = "-XX:CICompilerCount=2 '-Dchatlog.note=two words'"
    for command in _commands(tmp_path, monkeypatch, stack_java_options=options):
        assert "-XX:CICompilerCount=2" in command
        assert "-Dchatlog.note=two words" in command
        assert command.index("-Dchatlog.note=two words") < command.index("-cp")


def test_options_no_shell_could_split_are_refused() -> None:
    with pytest.raises(ValidationError, match="No closing quotation"):
        StackSettings(stack_java_options='-Dchatlog.note="open')
