"""``chatlog serve --workers 2`` (the real command, a subprocess on a free port) over a keyspace the sink's
executor wrote: two worker processes answer a user's month, ``/metrics`` counts the requests of both, and
SIGTERM stops every worker with exit status 0; a parent killed with SIGKILL leaves no worker behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from core.settings import StackSettings
from core.times import now_ms
from sink.settings import SinkSettings
from tests.integration.serve.events import make_events, write
from tests.serve_workers import (
    left_after,
    metrics_dir,
    request_until_every_worker_answered,
    requests_counted,
    stop,
    wait_until_serving,
)
from tests.uvicorn_thread import free_port

USER_MONTH = "/{ct}/{c}/{ut}/{u}/{y}/{m}"


def _serve_on_two_workers(
    sink_settings: SinkSettings, fresh_topics: StackSettings, tmp_path: Path
) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``chatlog serve --workers 2`` on a free port over the sink's keyspace: the process, its base URL and
    its log."""
    port = free_port()
    env = {
        **os.environ,
        "CHATLOG_SERVE_LOG_LEVEL": "warning",
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": fresh_topics.kafka_bootstrap_servers,
        **fresh_topics.topic_env(),
    }
    chatlog = shutil.which("chatlog", path=str(Path(sys.executable).parent)) or "chatlog"
    command = [chatlog, "serve", "--workers", "2", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "--keyspace", sink_settings.cassandra_keyspace],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return proc, f"http://127.0.0.1:{port}", log


def test_two_workers_serve_count_and_stop_on_sigterm(
    sink_settings: SinkSettings, fresh_topics: StackSettings, tmp_path: Path
) -> None:
    at = now_ms()
    events = make_events(300, now_ms=at)
    write(sink_settings, events)
    month = datetime.fromtimestamp(at / 1000, UTC)
    path = f"/channel/chan0/user/user0/{month.year}/{month.month}"
    expected = sum(
        1 for e in events if e.channel == "chan0" and e.user_login == "user0" and e.kind == "PRIVMSG"
    )
    assert expected > 0

    proc, base, log = _serve_on_two_workers(sink_settings, fresh_topics, tmp_path)
    try:
        workers = wait_until_serving(proc, base, log, workers=2)
        directory = metrics_dir(workers[0])
        assert httpx.get(base + path, timeout=60).text.count("\n") >= expected  # the lines, from either
        sent = 1 + request_until_every_worker_answered(base, path, workers)
        assert requests_counted(base, USER_MONTH) == sent  # every worker's, whichever answers /metrics
        assert requests_counted(base, USER_MONTH) == sent
        assert stop(proc, signal.SIGTERM, workers, log) == 0, log.read_text()[-3000:]
        assert not directory.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_workers_end_when_their_parent_is_killed(
    sink_settings: SinkSettings, fresh_topics: StackSettings, tmp_path: Path
) -> None:
    proc, base, log = _serve_on_two_workers(sink_settings, fresh_topics, tmp_path)
    try:
        workers = wait_until_serving(proc, base, log, workers=2)
    finally:
        proc.kill()  # SIGKILL: the parent stops nothing itself
        proc.wait()
    left = left_after(workers, 45)
    assert not left, f"workers {left} still run after their parent was killed: {log.read_text()[-3000:]}"
    with pytest.raises(httpx.ConnectError):
        httpx.get(base + "/health", timeout=5)
