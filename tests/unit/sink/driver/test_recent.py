"""The ids the streaming sink wrote lately (sink_dedup=writer): a window of batch time."""

from __future__ import annotations

from sink.driver.recent import RecentIds
from sink.executor.dedup import id_of, id_set


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_next_batch_gets_the_ids_of_the_batches_within_the_window() -> None:
    clock = _Clock()
    recent = RecentIds(10_000, clock)
    recent.add(id_of("a"))
    clock.now += 6
    recent.add(id_of("b") + id_of("c"))
    clock.now += 5  # batch "a" ended 11 s ago: out of the 10-s window
    assert id_set(recent.blob()) == {id_of("b"), id_of("c")}
    assert len(recent) == 2


def test_the_latest_batch_is_kept_however_old() -> None:
    clock = _Clock()
    recent = RecentIds(1_000, clock)
    assert recent.blob() == b""
    recent.add(id_of("a"))
    recent.add(id_of("b"))
    clock.now += 3600  # an idle sink
    assert id_set(recent.blob()) == {id_of("b")}
