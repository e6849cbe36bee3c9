"""The image's entry point dispatches to chatlog, spark-submit, or Spark's Kubernetes driver/executor."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.unit.deploy import tooling

ENTRYPOINT = tooling.REPO / "k8s" / "image" / "entrypoint.sh"


@pytest.fixture
def fake_image(tmp_path: Path) -> dict[str, str]:
    """SPARK_HOME, JAVA_HOME and a `chatlog` on PATH whose programs print their name and arguments."""
    recorder = '#!/bin/sh\nprintf "%s\\n" "$(basename "$0")" "$@"\n'
    spark_bin, java_bin, path_bin = tmp_path / "spark" / "bin", tmp_path / "java" / "bin", tmp_path / "bin"
    for directory, name in ((spark_bin, "spark-submit"), (java_bin, "java"), (path_bin, "chatlog")):
        directory.mkdir(parents=True)
        (directory / name).write_text(recorder)
        (directory / name).chmod(0o755)
    return {
        "PATH": f"{path_bin}:/usr/bin:/bin",
        "SPARK_HOME": str(tmp_path / "spark"),
        "JAVA_HOME": str(tmp_path / "java"),
    }


def _run(env: dict[str, str], *args: str) -> list[str]:
    proc = subprocess.run(
        ["bash", str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_entrypoint_is_executable() -> None:
    assert os.access(ENTRYPOINT, os.X_OK)


def test_chatlog_commands_pass_through(fake_image: dict[str, str]) -> None:
    assert _run(fake_image, "ingest", "--replica", "1") == ["chatlog", "ingest", "--replica", "1"]
    assert _run(fake_image) == ["chatlog"]


def test_spark_submit_is_pysparks(fake_image: dict[str, str]) -> None:
    assert _run(fake_image, "spark-submit", "/opt/chatlog/app/sink/job/command.py") == [
        "spark-submit",
        "/opt/chatlog/app/sink/job/command.py",
    ]


def test_driver_runs_spark_submit_in_client_mode_bound_to_the_pod(fake_image: dict[str, str]) -> None:
    env = {**fake_image, "SPARK_DRIVER_BIND_ADDRESS": "10.1.2.3"}
    out = _run(env, "driver", "--properties-file", "/opt/spark/conf/spark.properties", "local:///job.py")
    assert out == [
        "spark-submit",
        "--conf",
        "spark.driver.bindAddress=10.1.2.3",
        "--deploy-mode",
        "client",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "local:///job.py",
    ]


def test_executor_starts_the_kubernetes_backend_with_java_options_in_order(
    fake_image: dict[str, str],
) -> None:
    env = {
        **fake_image,
        "SPARK_CONF_DIR": "/opt/spark/conf",
        "SPARK_JAVA_OPT_10": "-Dten=10",
        "SPARK_JAVA_OPT_2": "-Dtwo=a b",
        "SPARK_JAVA_OPT_0": "-Dzero=0",
        "SPARK_EXECUTOR_MEMORY": "1g",
        "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@driver-svc:7078",
        "SPARK_EXECUTOR_ID": "3",
        "SPARK_EXECUTOR_CORES": "2",
        "SPARK_APPLICATION_ID": "spark-abc",
        "SPARK_EXECUTOR_POD_IP": "10.1.2.4",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_NAME": "chatlog-sink-exec-3",
    }
    out = _run(env, "executor")
    assert out[:7] == ["java", "-Dzero=0", "-Dtwo=a b", "-Dten=10", "-Xms1g", "-Xmx1g", "-cp"]
    assert out[7] == f"/opt/spark/conf:{fake_image['SPARK_HOME']}/jars/*"
    assert out[8] == "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
    flags = dict(zip(out[9::2], out[10::2], strict=True))
    assert flags == {
        "--driver-url": "spark://CoarseGrainedScheduler@driver-svc:7078",
        "--executor-id": "3",
        "--cores": "2",
        "--app-id": "spark-abc",
        "--hostname": "10.1.2.4",
        "--resourceProfileId": "0",
        "--podName": "chatlog-sink-exec-3",
    }


def test_executor_without_spark_environment_fails_instead_of_guessing(fake_image: dict[str, str]) -> None:
    proc = subprocess.run(
        ["bash", str(ENTRYPOINT), "executor"], env=fake_image, capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0
    assert "SPARK_EXECUTOR_MEMORY" in proc.stderr
