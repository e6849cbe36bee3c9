"""The catch-up figures of ``chatlog bench sink --outage-s`` from a timeline of (sent, latency)."""

from __future__ import annotations

from bench.sink_catchup import recovery

RESTART = 100_000


def test_caught_up_is_the_write_of_the_last_late_event() -> None:
    # 50 events sent during a 50 s outage, written in the 20 s after the restart; then live ones
    backlog = [(50_000 + i * 1000, float(RESTART + 400 * i - (50_000 + i * 1000))) for i in range(50)]
    live = [(RESTART + 20_000 + i * 100, 300.0) for i in range(30)]
    caught_up_s, behind, drained, after = recovery([*backlog, *live], RESTART)
    last = backlog[-1]
    assert caught_up_s == (last[0] + last[1] - RESTART) / 1000 == 19.6
    assert behind == 50 and drained == 50
    assert after == [300.0] * 30


def test_a_sink_that_never_fell_behind_is_caught_up_at_once() -> None:
    live = [(RESTART + i * 100, 250.0) for i in range(10)]
    assert recovery(live, RESTART) == (0.0, 0, 0, [250.0] * 10)


def test_a_late_event_after_the_restart_moves_the_moment() -> None:
    timeline = [(RESTART + 1000, 300.0), (RESTART + 2000, 5000.0), (RESTART + 9000, 200.0)]
    caught_up_s, _behind, drained, after = recovery(timeline, RESTART)
    assert caught_up_s == 7.0 and drained == 2 and after == [200.0]
