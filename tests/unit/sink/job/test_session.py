"""The sink's Spark configuration (pure: no JVM is started), and the code it ships to a cluster's
executors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sink.job.session import FILESYSTEM_CHECKPOINTS, code_archive, session_conf
from sink.settings import SinkSettings

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> SinkSettings:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    return SinkSettings(spark_jars="/opt/jars/a.jar,/opt/jars/b.jar", spark_shuffle_partitions=3)  # type: ignore[call-arg]


def test_the_sink_keeps_no_state_in_spark(settings: SinkSettings) -> None:
    """The writers drop copies (no dropDuplicatesWithinWatermark): no state store is configured."""
    assert not any(key.startswith("spark.sql.streaming.stateStore") for key in session_conf(settings))


def test_the_drivers_jvm_options_reach_a_driver_that_starts_its_own_jvm(settings: SinkSettings) -> None:
    assert (
        session_conf(settings)["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    )
    own = session_conf(settings.model_copy(update={"spark_driver_java_options": "-Xss4m"}))
    assert own["spark.driver.extraJavaOptions"] == "-Xss4m"
    none = session_conf(settings.model_copy(update={"spark_driver_java_options": ""}))
    assert "spark.driver.extraJavaOptions" not in none  # the JVM's defaults


def test_settings_reach_the_conf(settings: SinkSettings) -> None:
    conf = session_conf(settings)
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.jars"] == "/opt/jars/a.jar,/opt/jars/b.jar"
    assert conf["spark.master"] == settings.spark_master
    assert conf["spark.python.worker.reuse"] == "true"


def test_local_checkpoints_use_the_filesystem_manager_and_remote_ones_spark_default(
    settings: SinkSettings,
) -> None:
    local = session_conf(settings.model_copy(update={"sink_checkpoint": "/tmp/cp"}))
    assert local["spark.sql.streaming.checkpointFileManagerClass"] == FILESYSTEM_CHECKPOINTS
    default = session_conf(settings)  # <state_dir>/sink/checkpoint
    assert default["spark.sql.streaming.checkpointFileManagerClass"] == FILESYSTEM_CHECKPOINTS
    remote = session_conf(settings.model_copy(update={"sink_checkpoint": "s3a://bucket/cp"}))
    assert "spark.sql.streaming.checkpointFileManagerClass" not in remote


def test_the_code_shipped_to_a_cluster_holds_every_package_the_writer_imports(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(code_archive(tmp_path / "code.zip")) as archive:
        names = set(archive.namelist())
    for module in (
        "sink/writer/partition.py",
        "sink/framing.py",
        "sink/dedup.py",
        "consent/records.py",
        "schemas/chat_event.py",
        "core/errors.py",
    ):
        assert module in names
    assert not any("__pycache__" in name for name in names)


def _imported(entry: str) -> set[str]:
    """The project's modules ``entry`` imports, at once or inside a function, and what they import in turn."""
    tops = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    found: set[str] = set()
    todo = [entry]
    while todo:
        module = todo.pop()
        base = REPO.joinpath(*module.split("."))
        path = base / "__init__.py" if (base / "__init__.py").exists() else base.with_suffix(".py")
        if module in found or not path.exists():  # a name imported from a module, not a module
            continue
        found.add(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            todo += [name for name in names if name.split(".")[0] in tops]
    return found


def test_the_code_shipped_to_a_cluster_holds_every_module_the_writer_imports(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(code_archive(tmp_path / "code.zip")) as archive:
        names = set(archive.namelist())
    modules = _imported("sink.writer.partition") | _imported("sink.framing")
    assert {m.split(".")[0] for m in modules} >= {"schemas", "core", "consent", "sink", "store"}
    missing = [
        m
        for m in sorted(modules)
        if f"{m.replace('.', '/')}.py" not in names and f"{m.replace('.', '/')}/__init__.py" not in names
    ]
    assert missing == []
