"""The lazy zip-directory invalidation (an archive is re-read only when it changed) and the frozen heap."""

from __future__ import annotations

import gc
import importlib
import sys
import weakref
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path

import pytest

from sink.executor import worker_setup as pyworker

zip_cpython_311 = pytest.mark.skipif(sys.version_info >= (3, 12), reason="CPython 3.12+ invalidates lazily")


def _zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


@zip_cpython_311
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


@zip_cpython_311
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


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def fresh_freeze(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(pyworker, "_frozen", False)
    gc.unfreeze()
    yield
    gc.unfreeze()


def _tracked(obj: object) -> bool:
    """``obj`` is in one of the collector's generations (not frozen)."""
    return any(o is obj for o in gc.get_objects())


@pytest.mark.usefixtures("fresh_freeze")
def test_freeze_heap_exempts_what_lives_and_collects_cycles_first() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    dead_cycle = weakref.ref(a)
    del a, b
    alive = [1, 2, 3]
    assert _tracked(alive)

    pyworker.freeze_heap()

    assert dead_cycle() is None  # collected before freezing, not kept forever
    assert gc.get_freeze_count() > 0
    assert not _tracked(alive)
    later = [4, 5, 6]
    assert _tracked(later)  # what tasks allocate afterwards is still collected


@pytest.mark.usefixtures("fresh_freeze")
def test_freeze_heap_runs_once_per_process() -> None:
    pyworker.freeze_heap()
    frozen = gc.get_freeze_count()
    keep = [[i] for i in range(100)]
    pyworker.freeze_heap()
    assert gc.get_freeze_count() <= frozen  # nothing new frozen (frozen objects may be freed meanwhile)
    assert _tracked(keep)
