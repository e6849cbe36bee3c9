"""The private Spark APIs of the sink, fenced in sink/spark_private.py (the only hand-off: the public-API
fallback was removed): they exist in the installed Spark (its jars, its JVM), the start-up check names what is
missing in one line, and the zip-import patch.

A Spark upgrade that moves one fails here, in one line naming it, instead of in a running sink."""

from __future__ import annotations

import importlib
import sys
import zipfile
import zipimport
from pathlib import Path
from typing import Any

import pyspark
import pytest

from sink import spark_private
from sink.spark_private import (
    CHECKPOINT_MANAGER_CONF,
    PrivateApiMissing,
    check,
    check_query,
    checkpoint_manager_class,
    lazy_zip_invalidation,
    spark_version,
)

JARS = Path(pyspark.__file__).parent / "jars"


def _class_bytes(name: str) -> bytes | None:
    entry = name.replace(".", "/") + ".class"
    for jar in JARS.glob("spark-sql_*.jar"):
        with zipfile.ZipFile(jar) as z:
            if entry in z.namelist():
                return z.read(entry)
    return None


@pytest.mark.parametrize("name", [checkpoint_manager_class()])
def test_the_configured_spark_classes_exist_in_the_installed_spark(name: str) -> None:
    assert _class_bytes(name) is not None, f"{name} is not in Spark {pyspark.__version__}'s spark-sql jar"


def test_the_checkpoint_manager_moved_in_spark_4_1() -> None:
    assert checkpoint_manager_class((4, 0)).endswith("streaming.FileSystemBasedCheckpointFileManager")
    assert checkpoint_manager_class((4, 2)).endswith(
        "streaming.checkpointing.FileSystemBasedCheckpointFileManager"
    )
    assert spark_version() >= (4, 0)


# -- the start-up check ----------------------------------------------------------------------------------


def test_a_missing_api_is_one_line_naming_what_to_install() -> None:
    """There is no public-API fallback any more: the way out is the pyspark release chatlog pins."""
    message = str(spark_private.missing("DataFrame._jdf"))
    assert "\n" not in message
    assert message == (
        f"Spark {pyspark.__version__} lacks DataFrame._jdf, a private Spark API the sink uses: "
        "install the pyspark release chatlog's pyproject.toml names"
    )


def test_a_session_without_a_jvm_fails_the_check() -> None:
    class Connect:  # a Spark Connect session has no Py4J gateway
        pass

    with pytest.raises(PrivateApiMissing, match=r"lacks SparkSession\._jvm"):
        check(Connect())  # type: ignore[arg-type]


def test_a_query_without_its_jvm_query_fails_the_check() -> None:
    with pytest.raises(PrivateApiMissing, match=r"lacks StreamingQuery\._jsq"):
        check_query(object())  # type: ignore[arg-type]


@pytest.mark.spark
def test_the_installed_spark_passes_the_check(spark: Any) -> None:
    check(spark)
    assert spark.conf.get(CHECKPOINT_MANAGER_CONF) == checkpoint_manager_class()  # checked, not just unset


def test_a_dataframe_without_its_jvm_dataset_fails_the_check() -> None:
    class Frame:  # no _jdf: the Dataset the records are handed over from
        pass

    class Session:
        _jvm = object()

        def range(self, _n: int) -> Frame:
            return Frame()

    with pytest.raises(PrivateApiMissing, match=r"lacks DataFrame\._jdf"):
        check(Session())  # type: ignore[arg-type]


@pytest.mark.spark
def test_a_checkpoint_manager_spark_lacks_fails_the_check_with_its_name(spark: Any) -> None:
    before = spark.conf.get(CHECKPOINT_MANAGER_CONF, None)
    spark.conf.set(CHECKPOINT_MANAGER_CONF, "org.apache.spark.sql.execution.streaming.GoneManager")
    try:
        with pytest.raises(PrivateApiMissing, match=r"lacks the checkpoint manager .*GoneManager"):
            check(spark)
    finally:
        if before is None:
            spark.conf.unset(CHECKPOINT_MANAGER_CONF)
        else:
            spark.conf.set(CHECKPOINT_MANAGER_CONF, before)


# -- the zip-import patch of the Python workers -------------------------------------------------------------

zip_cpython_311 = pytest.mark.skipif(sys.version_info >= (3, 12), reason="CPython 3.12+ invalidates lazily")


def _zip(path: Path, modules: dict[str, str]) -> Path:
    """``path``, written as a zip of the modules' sources (name -> source)."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)
    return path


@pytest.fixture
def lazy_zips(monkeypatch: pytest.MonkeyPatch) -> None:
    """The patch applied for one test, and undone after it."""
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    lazy_zip_invalidation()


@zip_cpython_311
def test_unchanged_archive_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lazy_zips: None
) -> None:
    path = _zip(tmp_path / "lib.zip", {"alpha": "X = 1\n"})
    importer = zipimport.zipimporter(str(path))
    reads: list[str] = []
    real_read = zipimport._read_directory  # type: ignore[attr-defined]

    def counting_read(archive: str) -> object:
        reads.append(archive)
        return real_read(archive)

    monkeypatch.setattr(zipimport, "_read_directory", counting_read)
    lazy_zip_invalidation()  # idempotent: still wrapped once
    for _ in range(5):
        importer.invalidate_caches()
    assert reads == [str(path)]  # the first invalidation reads, the next four do not

    _zip(path, {"alpha": "X = 1\n", "beta_mod": "Y = 2\n"})
    importer.invalidate_caches()
    assert len(reads) == 2
    assert importer.find_spec("beta_mod") is not None


@zip_cpython_311
def test_imports_from_a_zip_still_work_after_invalidation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lazy_zips: None
) -> None:
    path = _zip(tmp_path / "pkgs.zip", {"chatlog_zip_probe": "VALUE = 41\n"})
    monkeypatch.syspath_prepend(str(path))
    importlib.invalidate_caches()
    module = importlib.import_module("chatlog_zip_probe")
    try:
        assert module.VALUE == 41
    finally:
        sys.modules.pop("chatlog_zip_probe", None)


def test_records_of_another_source_are_never_cut() -> None:
    assert spark_private.input_cut(iter([b"a", b"b"]))() is False
    assert spark_private.input_cut(x for x in [b"a"])() is False  # a generator without pyspark's stream
