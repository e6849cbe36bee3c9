"""The sink bench's steady load: each event it sends says in its line what its fields say."""

from __future__ import annotations

from bench.sink_data import synthetic_events
from bench.sink_latency import _with_id_and_time
from core.irc_parse import parse_line


def test_a_load_event_line_carries_its_new_id_and_time() -> None:
    shape = synthetic_events(3, seed=5)[1]
    mid, now = "0f6f4b4e-5a4c-4c1e-9d3b-6a1f2e3d4c5b", shape.sent_at + 60_000
    raw = _with_id_and_time(shape, mid, now)
    event = parse_line(raw, received_at=now)
    assert event is not None
    assert (event.message_id, event.sent_at, event.text) == (mid, now, shape.text)
    assert raw.replace(mid, shape.message_id).replace(str(now), str(shape.sent_at)) == shape.raw
