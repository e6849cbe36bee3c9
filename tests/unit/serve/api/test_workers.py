"""serve/api/workers.py: the app on two uvicorn workers in a subprocess (the service over an in-memory store,
:func:`serve.testing.memory_app`: no Kafka, no Cassandra): both answer, ``/metrics`` counts every worker's
requests, SIGTERM and SIGINT stop them all with status 0; a worker that cannot start stops the service."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.settings import load
from serve.api.workers import worker_environment
from serve.settings import ServeSettings
from tests.serve_workers import (
    metrics_dir,
    request_until_every_worker_answered,
    requests_counted,
    stop,
    wait_until_serving,
)
from tests.uvicorn_thread import free_port

SERVE = (
    "from serve.api.workers import serve_on_workers; from serve.settings import ServeSettings; "
    "serve_on_workers(ServeSettings(), 2, app={app!r})"
)


@contextmanager
def on_two_workers(
    tmp_path: Path, app: str = "serve.testing:memory_app", **env: str
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    port = free_port()
    log = tmp_path / "serve.log"
    variables = {
        **os.environ,
        "CHATLOG_SERVE_HOST": "127.0.0.1",
        "CHATLOG_SERVE_PORT": str(port),
        "CHATLOG_SERVE_LOG_LEVEL": "warning",
        **env,
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE.format(app=app)], env=variables, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield proc, f"http://127.0.0.1:{port}", log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_two_workers_answer_metrics_count_both_and_sigterm_stops_all(tmp_path: Path) -> None:
    with on_two_workers(tmp_path) as (proc, base, log):
        workers = wait_until_serving(proc, base, log, workers=2)
        directory = metrics_dir(workers[0])
        sent = request_until_every_worker_answered(base, "/channels", workers)
        assert requests_counted(base, "/channels") == sent  # whichever worker answers /metrics
        assert requests_counted(base, "/channels") == sent
        assert stop(proc, signal.SIGTERM, workers, log) == 0
    assert not directory.exists()  # the parent removes the metrics directory at exit


def test_sigint_stops_every_worker(tmp_path: Path) -> None:
    with on_two_workers(tmp_path) as (proc, base, log):
        workers = wait_until_serving(proc, base, log, workers=2)
        assert stop(proc, signal.SIGINT, workers, log) == 0


def test_a_worker_that_cannot_start_stops_the_service(tmp_path: Path) -> None:
    closed = free_port()  # the worker's lifespan cannot reach Cassandra there
    env = {
        "CHATLOG_CASSANDRA_PORT": str(closed),
        "CHATLOG_SERVE_CONSENT": "false",
        "CHATLOG_SERVE_FRESH": "false",
    }
    with on_two_workers(tmp_path, "serve.api.workers:worker_app", **env) as (proc, _base, log):
        try:
            status = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running: {log.read_text()[-3000:]}")
        assert status != 0
        assert "chatlog serve stopped: a worker failed to start (pid " in log.read_text()


def test_the_workers_get_the_settings_the_flags_set() -> None:
    settings = load(ServeSettings, serve_host="0.0.0.0", serve_port=8123, cassandra_keyspace="other")
    assert worker_environment(settings) == {
        "CHATLOG_SERVE_HOST": "0.0.0.0",
        "CHATLOG_SERVE_PORT": "8123",
        "CHATLOG_CASSANDRA_KEYSPACE": "other",
    }
