"""Several ingesters on one host (issue 13, item 2): the default metrics port falls back to a free one;
a port set explicitly that is taken is one line naming CHATLOG_METRICS_PORT."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from core.errors import ChatlogError
from core.settings import load
from ingest import status
from ingest.metrics import MetricsServer
from ingest.settings import IngestSettings


@pytest.fixture
def taken() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_taken_default_port_falls_back_to_a_free_one(taken: int) -> None:
    server = MetricsServer(CollectorRegistry(), lambda: True, "127.0.0.1", taken, fallback=True)
    server.start()
    try:
        assert server.port not in (0, taken)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/ready", timeout=5) as answer:
            assert answer.status == 200
    finally:
        server.stop()


def test_a_taken_explicit_port_is_one_line_naming_the_setting(taken: int) -> None:
    with pytest.raises(ChatlogError) as info:
        MetricsServer(CollectorRegistry(), lambda: True, "127.0.0.1", taken)
    assert str(info.value) == (
        f"cannot listen on 127.0.0.1:{taken} (CHATLOG_METRICS_HOST, CHATLOG_METRICS_PORT): "
        "Address already in use"
    )


def test_only_an_unset_port_may_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHATLOG_METRICS_PORT", raising=False)
    assert load(IngestSettings).metrics_port == 9100 and not load(IngestSettings).metrics_port_chosen
    assert load(IngestSettings, metrics_port=9100).metrics_port_chosen  # a flag or an override
    monkeypatch.setenv("CHATLOG_METRICS_PORT", "9100")
    assert load(IngestSettings).metrics_port_chosen


def test_the_port_is_sent_in_the_heartbeat_and_shown_by_status() -> None:
    hb = status.Heartbeat(
        worker_id="a",
        replica=0,
        host="box",
        pid=1,
        started_at=0,
        sent_at=1,
        buckets=[0, 1],
        metrics_port=40123,
    )
    assert status.decode_heartbeat(status.encode_heartbeat(hb)) == hb
    old = b'{"worker_id":"b","replica":0,"host":"box","pid":2,"started_at":0,"sent_at":1}'
    assert status.decode_heartbeat(old) is not None  # heartbeats of older ingesters still count
    report = status.heartbeat_view([], [hb])
    assert report[0].metrics == {"a": "box:40123"}
    assert "a: 2 bucket(s) [0-1], metrics box:40123" in status.report_text(report)
    assert status.report_json(report)["replicas"][0]["metrics"] == {"a": "box:40123"}  # type: ignore[index]
