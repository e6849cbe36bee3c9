"""A worker's set-up: the zip-import patch (tested in tests/unit/sink/test_spark_private.py), and the frozen
heap."""

from __future__ import annotations

import gc
import sys
import weakref
import zipimport
from collections.abc import Iterator

import pytest

from sink.writer import worker_setup


@pytest.fixture
def unpatched_zipimport(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The patch under test is undone after the test (monkeypatch restores the original method)."""
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    yield


def _patched() -> bool:
    return bool(getattr(zipimport.zipimporter.invalidate_caches, "_chatlog_lazy", False))


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="CPython 3.12+ invalidates lazily")
@pytest.mark.usefixtures("unpatched_zipimport")
def test_a_prepared_worker_has_the_zip_import_patched() -> None:
    assert not _patched()
    worker_setup.prepare()
    assert _patched()
    worker_setup.prepare()  # idempotent
    assert _patched()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def fresh_freeze(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(worker_setup, "_frozen", False)
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

    worker_setup.freeze_heap()

    assert dead_cycle() is None  # collected before freezing, not kept forever
    assert gc.get_freeze_count() > 0
    assert not _tracked(alive)
    later = [4, 5, 6]
    assert _tracked(later)  # what tasks allocate afterwards is still collected


@pytest.mark.usefixtures("fresh_freeze")
def test_freeze_heap_runs_once_per_process() -> None:
    worker_setup.freeze_heap()
    frozen = gc.get_freeze_count()
    keep = [[i] for i in range(100)]
    worker_setup.freeze_heap()
    assert gc.get_freeze_count() <= frozen  # nothing new frozen (frozen objects may be freed meanwhile)
    assert _tracked(keep)
