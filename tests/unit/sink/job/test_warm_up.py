"""sink/job/warm_up.py: on a cluster, a Spark job of its own sets up the executors' Python workers (as the
writer's tasks do) while the driver starts the query; nothing on a local master; a failure changes nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from sink.job import warm_up
from sink.settings import SinkSettings
from sink.writer import collaborators, worker_setup
from sink.writer.collaborators import Collaborators

SETTINGS = SinkSettings()  # type: ignore[call-arg]


class _Rdd:
    def __init__(self, parts: list[list[int]], fail: bool) -> None:
        self.parts, self.fail = parts, fail

    def mapPartitions(self, fn: Callable[[Iterator[int]], Iterable[int]]) -> _Rdd:  # noqa: N802 (pyspark's)
        if self.fail:
            raise RuntimeError("SparkContext was shut down")
        return _Rdd([list(fn(iter(p))) for p in self.parts], self.fail)

    def sum(self) -> int:
        return sum(sum(p) for p in self.parts)


class _Context:
    def __init__(self, master: str, parallelism: int = 1, fail: bool = False) -> None:
        self.master, self.defaultParallelism, self.fail = master, parallelism, fail
        self.jobs: list[int] = []

    def setJobDescription(self, _text: str) -> None:  # noqa: N802 (pyspark's)
        pass

    def parallelize(self, items: range, slices: int) -> _Rdd:
        self.jobs.append(slices)
        return _Rdd([[i] for i in items], self.fail)


class _Session:
    def __init__(self, sc: _Context) -> None:
        self.sparkContext = sc


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each warm-up task set up: the worker prepared, then the production wiring (with or without dead
    letters) and one storage task of it made (its Cassandra session connected and its inserts prepared)."""
    calls: list[bool] = []
    prepared: list[bool] = []

    def production(_settings: SinkSettings, *, dead_letters: bool = True) -> Collaborators:
        assert prepared, "the worker is prepared before its collaborators are wired"

        def storage() -> Any:
            calls.append(dead_letters)

        return Collaborators(storage, None)

    monkeypatch.setattr(worker_setup, "prepare", lambda: prepared.append(True))
    monkeypatch.setattr(collaborators, "production", production)
    return calls


def test_a_clusters_workers_are_set_up_in_a_job_of_their_own(wired: list[bool]) -> None:
    sc = _Context("spark://127.0.0.1:17077", parallelism=3)
    thread = warm_up.warm_executors(_Session(sc), SETTINGS)  # type: ignore[arg-type]
    assert thread is not None
    thread.join(5)
    assert sc.jobs == [3] and wired == [True, True, True]  # a task per slot, each wired as a batch's


def test_at_least_two_tasks_before_any_executor_registered(wired: list[bool]) -> None:
    sc = _Context("spark://127.0.0.1:17077", parallelism=0)
    thread = warm_up.warm_executors(_Session(sc), SETTINGS)  # type: ignore[arg-type]
    assert thread is not None
    thread.join(5)
    assert sc.jobs == [2] and len(wired) == 2


def test_nothing_on_a_local_master(wired: list[bool]) -> None:
    sc = _Context("local[2]")
    assert warm_up.warm_executors(_Session(sc), SETTINGS) is None  # type: ignore[arg-type]
    assert sc.jobs == [] and wired == []


def test_a_failed_warm_up_is_logged_only(wired: list[bool], caplog: pytest.LogCaptureFixture) -> None:
    sc = _Context("spark://127.0.0.1:17077", fail=True)
    thread = warm_up.warm_executors(_Session(sc), SETTINGS)  # type: ignore[arg-type]
    assert thread is not None
    thread.join(5)
    assert "warming up the executors failed: SparkContext was shut down" in caplog.text
    assert wired == []
