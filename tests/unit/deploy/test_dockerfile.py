"""The Dockerfile passes hadolint, runs as a non-root user and bakes the Spark Kafka source in."""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.deploy import tooling

DOCKERFILE = tooling.REPO / "Dockerfile"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(
        r"\\\n", " ", "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    )
    return [
        (m.group(1).upper(), m.group(2).strip())
        for m in (re.match(r"\s*([A-Za-z]+)\s+(.*)", ln) for ln in joined.splitlines())
        if m
    ]


def test_hadolint_finds_nothing() -> None:
    result = tooling.hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_hadolint_fails_a_broken_copy(tmp_path: Path) -> None:
    broken = tmp_path / "Dockerfile"
    text = DOCKERFILE.read_text().replace("USER 10001:10001", "USER root")
    broken.write_text(text + "RUN cd /tmp && apt-get install curl\n")
    result = tooling.hadolint(broken)
    assert result.returncode != 0
    for rule in ("DL3002", "DL3003", "DL3014"):  # last USER root, cd in RUN, apt-get without -y
        assert rule in result.stdout, result.stdout


def test_final_stage_runs_as_numeric_non_root_user_under_tini() -> None:
    steps = _instructions(DOCKERFILE.read_text())
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    final = steps[last_from:]
    users = [arg for op, arg in final if op == "USER"]
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000, "a numeric uid lets Kubernetes check runAsNonRoot"
    entrypoint = [arg for op, arg in final if op == "ENTRYPOINT"][-1]
    assert '"/usr/bin/tini", "--"' in entrypoint


def test_base_images_are_pinned_and_java_17_is_installed() -> None:
    steps = _instructions(DOCKERFILE.read_text())
    args = dict(arg.split("=", 1) for op, arg in steps if op == "ARG" and "=" in arg)
    assert re.fullmatch(r"python:3\.11-slim-[a-z]+", args["PYTHON_IMAGE"])
    assert all(":latest" not in arg for op, arg in steps if op == "FROM")
    runtime_runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "openjdk-17-jre-headless" in runtime_runs


def test_spark_kafka_source_is_fetched_at_build_time_with_the_project_coordinates() -> None:
    text = DOCKERFILE.read_text()
    assert "a.spark_kafka_bundle(a.installed_pyspark_version())" in text
    assert "spark-sql-kafka-0-10_" in text, "the build checks the Kafka source landed in pyspark's jars/"


def test_every_copied_path_is_in_the_build_context() -> None:
    """.dockerignore excludes everything but what the Dockerfile copies; each COPY source must be let in."""
    allowed = [
        ln[1:].rstrip("/")
        for ln in (tooling.REPO / ".dockerignore").read_text().splitlines()
        if ln.startswith("!")
    ]
    sources = []
    for op, arg in _instructions(DOCKERFILE.read_text()):
        if op == "COPY" and "--from=" not in arg:
            sources.extend(arg.split()[:-1])
    assert sources
    for src in sources:
        path = src.rstrip("/").removeprefix("./")
        assert (tooling.REPO / path).exists(), f"COPY {src}: missing in the repository"
        assert any(path == a or path.startswith(a + "/") for a in allowed), (
            f"COPY {src}: .dockerignore drops it"
        )


def test_the_image_holds_every_product_package_and_not_the_lab() -> None:
    """The app stage copies each package the services import (consent and store were once left out: the
    image's services could not start) and nothing of the lab (the local stack, the demo, the benchmarks)."""
    copied = {
        arg.split()[0].rstrip("/").removeprefix("./")
        for op, arg in _instructions(DOCKERFILE.read_text())
        if op == "COPY" and "--from=" not in arg
    }
    packages = {p.parent.name for p in tooling.REPO.glob("*/__init__.py")} - {"tests"}
    assert packages - copied == {"lab"}


def test_sink_entry_file_exists_where_the_spark_application_expects_it() -> None:
    text = DOCKERFILE.read_text()
    assert "/opt/chatlog/app/sink/job/command.py" in text
    sparkapp = (tooling.REPO / "k8s" / "base" / "sink" / "sparkapplication.yaml").read_text()
    assert "mainApplicationFile: local:///opt/chatlog/app/sink/job/command.py" in sparkapp


def test_code_changes_do_not_rebuild_the_dependency_layers() -> None:
    """The deps stage (packages, jars: most of the image) copies only what decides its content."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for op, arg in _instructions(DOCKERFILE.read_text()):
        if op == "FROM":
            current = arg.split(" AS ")[-1] if " AS " in arg else "final"
        stages.setdefault(current, []).append((op, arg))
    copied = {src for op, arg in stages["deps"] if op == "COPY" for src in arg.split()[:-1]}
    assert copied == {
        "pyproject.toml",
        "core/__init__.py",
        "core/errors.py",
        "core/maven.py",
    }
    final_copies = [arg for op, arg in stages["final"] if op == "COPY"]
    assert "--from=deps /opt/chatlog /opt/chatlog" in final_copies
    assert "--from=app /opt/chatlog/app /opt/chatlog/app" in final_copies
