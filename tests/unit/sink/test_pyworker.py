"""The lazy zip-directory invalidation: an archive is re-read only when it changed."""

from __future__ import annotations

import importlib
import sys
import zipfile
import zipimport
from pathlib import Path

import pytest

from sink import pyworker

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="CPython 3.12+ invalidates lazily")


def _zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


def test_unchanged_archive_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lib.zip"
    _zip(path, {"alpha": "X = 1\n"})
    importer = zipimport.zipimporter(str(path))
    reads: list[str] = []
    real_read = zipimport._read_directory  # type: ignore[attr-defined]

    def counting_read(archive: str) -> object:
        reads.append(archive)
        return real_read(archive)

    monkeypatch.setattr(zipimport, "_read_directory", counting_read)
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    pyworker.prepare()
    pyworker.prepare()  # idempotent: wrapped once
    for _ in range(5):
        importer.invalidate_caches()
    assert reads == [str(path)]  # the first invalidation reads, the next four do not

    _zip(path, {"alpha": "X = 1\n", "beta_mod": "Y = 2\n"})
    importer.invalidate_caches()
    assert len(reads) == 2
    assert importer.find_spec("beta_mod") is not None


def test_imports_from_a_zip_still_work_after_invalidation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pkgs.zip"
    _zip(path, {"chatlog_zip_probe": "VALUE = 41\n"})
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    monkeypatch.syspath_prepend(str(path))
    pyworker.prepare()
    importlib.invalidate_caches()
    module = importlib.import_module("chatlog_zip_probe")
    try:
        assert module.VALUE == 41
    finally:
        sys.modules.pop("chatlog_zip_probe", None)
