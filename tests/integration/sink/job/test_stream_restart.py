"""kill -9 of the sink in the middle of its work, then a restart: no event lost, no row doubled."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from core.cql import connect
from core.settings import PROJECT_ROOT
from sink.settings import SinkSettings
from store.scan import stored_ids
from tests.integration.sink.records import count, dead_letters, make_events, message_ids, produce, uuids

pytestmark = pytest.mark.integration
CHATLOG = str(PROJECT_ROOT / ".venv" / "bin" / "chatlog")


def _env(settings: SinkSettings, **extra: object) -> dict[str, str]:
    keys = (
        "topic_messages", "topic_deadletter", "cassandra_keyspace", "sink_checkpoint", "sink_metrics_port",
        "sink_trigger", "spark_master", "spark_shuffle_partitions", "spark_log_level",
        "sink_cassandra_retry_s",
    )  # fmt: skip
    env = dict(os.environ)
    env.update({f"CHATLOG_{k.upper()}": str(getattr(settings, k)) for k in keys})
    env.update({f"CHATLOG_{k.upper()}": str(v) for k, v in extra.items()})
    return env


def test_kill_9_mid_batch_then_restart_gives_exact_rows(sink_settings: SinkSettings, tmp_path: Path) -> None:
    produced = produce(sink_settings, make_events(16_000), bad_every=1000)
    env = _env(sink_settings, sink_max_offsets_per_trigger=1500, sink_trigger="0 seconds")
    cluster, session = connect(sink_settings)  # one session polled (a new one each time is slow)
    with (tmp_path / "first.log").open("wb") as log:
        proc = subprocess.Popen(
            [CHATLOG, "sink"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 240
            written = 0
            while time.monotonic() < deadline and proc.poll() is None:
                written = len(stored_ids(session, sink_settings.cassandra_keyspace))
                if written >= 3000:
                    break
                time.sleep(0.3)
            assert proc.poll() is None, (tmp_path / "first.log").read_text()[-2000:]
            assert written >= 3000, "the sink wrote too little before the deadline"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            cluster.shutdown()
    partial = count(sink_settings)
    assert 0 < partial < len(produced.events), "killed too late to be mid-run"

    again = subprocess.run(
        [CHATLOG, "sink", "--available-now"],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "sink stopped after" in again.stdout
    assert "ids of the batches before the checkpoint's last commit seeded" in again.stdout + again.stderr
    ids = message_ids(sink_settings)
    assert len(ids) == len(set(ids)) == len(produced.events)
    assert set(ids) == set(uuids(produced.events))
    assert count(sink_settings, "user") == produced.with_user
    sources = {h["source"] for _v, h in dead_letters(sink_settings)}
    assert sources == set(produced.bad)  # at least once each (a re-run batch may send one again)
