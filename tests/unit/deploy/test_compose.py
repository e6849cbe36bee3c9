"""docker-compose.yml validates against the Compose specification and wires the services as intended."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from ingest.settings import IngestSettings
from tests.unit.deploy import tooling
from tests.unit.deploy.settings_names import known_variables

COMPOSE = tooling.REPO / "docker-compose.yml"
INGEST_GROUPS = {"ingest-r0": "0", "ingest-r1": "1"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration))


def test_compose_file_validates_against_the_compose_spec() -> None:
    result = tooling.check_compose(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_spec_check_fails_a_broken_copy(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(
        COMPOSE.read_text().replace("condition: service_completed_successfully", "condition: done", 1)
    )
    result = tooling.check_compose(broken)
    assert result.returncode != 0
    assert "condition" in result.stdout + result.stderr


def test_the_services_of_a_local_stack_are_there(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka", "cassandra", "irc", "init", *INGEST_GROUPS, "sink"} <= set(services)
    assert services["kafka"]["image"] == "apache/kafka:4.1.1"
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft
    assert services["cassandra"]["image"].startswith("cassandra:5.0")
    assert re.fullmatch(r"inspircd/inspircd-docker:3(\.\d+)*", services["irc"]["image"])
    assert services["init"]["command"][0] == "init"
    assert services["sink"]["command"] == ["sink"]


def test_dependencies_wait_for_health_and_for_the_init(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dependency, rule in service.get("depends_on", {}).items():
            condition = rule["condition"]
            if condition == "service_healthy":
                assert "healthcheck" in services[dependency], f"{name} waits for {dependency}'s health check"
            else:
                assert (dependency, condition) == ("init", "service_completed_successfully"), name
    for name in (*INGEST_GROUPS, "sink"):
        assert services[name]["depends_on"]["init"]["condition"] == "service_completed_successfully"


def test_ingest_groups_scale_with_compose_up_scale(compose: dict[str, Any]) -> None:
    for name, replica in INGEST_GROUPS.items():
        service = compose["services"][name]
        assert service["command"] == ["ingest", "--replica", replica]
        assert "container_name" not in service and "ports" not in service, f"{name} could not be scaled"
        drain = IngestSettings.model_fields["ingest_shutdown_drain_s"].default
        assert _seconds(service["stop_grace_period"]) >= drain + 10, "the SIGTERM hand-off needs its time"
        assert "/metrics" in " ".join(service["healthcheck"]["test"])


def test_sink_checkpoint_lives_on_a_named_volume(compose: dict[str, Any]) -> None:
    sink = compose["services"]["sink"]
    checkpoint = sink["environment"]["CHATLOG_SINK_CHECKPOINT"]
    assert checkpoint.startswith("file:///")
    mounts = {volume.split(":")[0]: volume.split(":")[1] for volume in sink["volumes"]}
    assert any(checkpoint.removeprefix("file://").startswith(path) for path in mounts.values())
    assert all(volume in compose["volumes"] for volume in mounts)


def test_settings_are_known_chatlog_variables(compose: dict[str, Any]) -> None:
    known = known_variables()
    for name, service in compose["services"].items():
        env = service.get("environment", {})
        unknown = {k for k in env if k.startswith("CHATLOG_")} - known
        assert not unknown, f"{name} sets unknown settings {unknown}"
    assert compose["services"]["ingest-r0"]["environment"]["CHATLOG_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"


def test_known_variables_come_from_every_settings_class() -> None:
    known = known_variables()
    for name in ("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "CHATLOG_METRICS_PORT", "CHATLOG_SINK_CHECKPOINT"):
        assert name in known
    assert "CHATLOG_KAFKA_BOOTSTRAP_SERVER" not in known


def test_irc_server_uses_the_shared_dev_configuration(compose: dict[str, Any]) -> None:
    config = compose["configs"]["inspircd-conf"]["file"]
    text = (tooling.REPO / config).read_text()
    assert 'port="6667"' in text and 'fakelag="no"' in text
    for module in ("cap", "ircv3_msgid", "ircv3_servertime"):
        assert f'<module name="{module}">' in text
