"""A demo run without the bench extra stops before it starts anything, in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from core.settings import StackSettings
from lab.demo import run as demo_run
from lab.extras import MissingExtra


def test_a_run_that_plots_needs_matplotlib_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the bench extra were not installed

    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the run was started")

    monkeypatch.setattr(demo_run, "Run", never)
    config = demo_run.demo_config(channels=10, rate=10.0, duration=1.0)
    config.results_dir = tmp_path
    with pytest.raises(MissingExtra, match=r"plotting needs the bench extra .*pip install -e '\.\[bench\]'"):
        demo_run.execute(StackSettings(state_dir=tmp_path), config, console=None)
    assert list(tmp_path.iterdir()) == []


def test_the_sink_of_a_run_goes_to_the_configured_spark_master_and_cassandra(tmp_path: Path) -> None:
    from lab.stack.cluster import Layout

    layout = Layout(StackSettings(state_dir=tmp_path), 3)
    config = demo_run.on_cluster(demo_run.demo_config(channels=2), layout)
    env = demo_run.Run(layout.client_settings(), config, console=None).env()
    assert env["CHATLOG_SPARK_MASTER"] == "spark://127.0.0.1:17077"
    assert env["CHATLOG_SINK_METRICS_PORT"] == "19181"
    assert env["CHATLOG_SINK_KAFKA_API_TIMEOUT_MS"] == "10000"
    assert env["CHATLOG_KAFKA_PRODUCER_REQUEST_TIMEOUT_MS"] == "5000"  # the ingesters' producers too
    assert env["CHATLOG_CASSANDRA_HOSTS"] == "127.0.0.11,127.0.0.12,127.0.0.13"
    assert env["CHATLOG_IRC_PORT"] == "16667"
    assert env["CHATLOG_INGEST_SHUTDOWN_DRAIN_S"] == "0"  # the run's end waits for no new owner
    assert env["CHATLOG_SINK_CHECKPOINT"].startswith(str(tmp_path / "cluster" / "runs"))
    local = demo_run.Run(StackSettings(state_dir=tmp_path), demo_run.demo_config(channels=2), console=None)
    assert local.env()["CHATLOG_SPARK_MASTER"] == "local[2]"
    assert local.env()["CHATLOG_SINK_METRICS_PORT"] == "9181"
    cluster_only = {"CHATLOG_SINK_KAFKA_API_TIMEOUT_MS", "CHATLOG_KAFKA_PRODUCER_REQUEST_TIMEOUT_MS"}
    assert not cluster_only & set(local.env())
