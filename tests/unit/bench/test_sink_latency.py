"""The sink bench's steady load: each event it sends says in its line what its fields say."""

from __future__ import annotations

from bench.sink_data import synthetic_events
from bench.sink_latency import TIMELINE_POINTS, _with_id_and_time, percentile, plotted
from core.irc_parse import parse_line


def test_a_load_event_line_carries_its_new_id_and_time() -> None:
    shape = synthetic_events(3, seed=5)[1]
    mid, now = "0f6f4b4e-5a4c-4c1e-9d3b-6a1f2e3d4c5b", shape.sent_at + 60_000
    raw = _with_id_and_time(shape, mid, now)
    event = parse_line(raw, received_at=now)
    assert event is not None
    assert (event.message_id, event.sent_at, event.text) == (mid, now, shape.text)
    assert raw.replace(mid, shape.message_id).replace(str(now), str(shape.sent_at)) == shape.raw


def test_a_percentile_is_a_sorted_value_to_a_tenth() -> None:
    values = [float(v) + 0.04 for v in range(100)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 99.0  # the last, not past it
    assert percentile([], 0.5) is None


def test_a_plotted_timeline_keeps_about_timeline_points_in_order() -> None:
    t0 = 1_790_000_000_000
    timeline = [(t0 + 10 * i, 100.4 + i) for i in range(TIMELINE_POINTS * 3 + 1)]
    points = plotted(timeline, t0)
    assert len(points) == TIMELINE_POINTS + 1  # every 3rd
    assert points[:3] == [(0.0, 100), (0.03, 103), (0.06, 106)]
    assert plotted(timeline[:3], t0 - 1500) == [(1.5, 100), (1.51, 101), (1.52, 102)]
