"""The README's "start as many as you like" on one host (issue 13, item 2): two ingesters with the
default metrics port both run; an explicitly chosen port that is taken is one line and exit code 2."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from core.settings import StackSettings
from tests.integration.ingest.ingester_env import ingester_env
from tests.unit.cli_runs import CHATLOG, chatlog, clean_environ

pytestmark = pytest.mark.integration


def _env(settings: StackSettings, unique: str) -> dict[str, str]:
    more = {"CHATLOG_INGEST_HEARTBEAT_S": "1", "CHATLOG_INGEST_SHUTDOWN_DRAIN_S": "0"}
    # no CHATLOG_METRICS_PORT: the default, as in the README
    return ingester_env(settings, settings.irc_port, f"test-{unique}", more)


def _status(env: dict[str, str]) -> dict[str, object]:
    run = chatlog(["status", "--json", "--replicas", "1"], env)
    report: dict[str, object] = json.loads(run.stdout)
    return report


def test_two_ingesters_on_one_host_both_run_with_the_default_metrics_port(
    fresh_topics: StackSettings, unique: str, tmp_path: Path
) -> None:
    env = _env(fresh_topics, unique)
    procs, logs = {}, {}
    try:
        for worker in ("a", "b"):
            logs[worker] = tmp_path / f"{worker}.log"
            with logs[worker].open("w") as out:
                procs[worker] = subprocess.Popen(
                    [CHATLOG, "ingest", "--replica", "0", "--worker-id", f"{unique}{worker}"],
                    env={**clean_environ(), **env},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            time.sleep(1.0)  # a binds first (9100 unless another process has it), then b
        deadline = time.monotonic() + 60
        metrics: dict[str, str] = {}
        while len(metrics) < 2 and time.monotonic() < deadline:
            assert all(p.poll() is None for p in procs.values()), {
                w: logs[w].read_text()[-3000:] for w in logs
            }
            replicas = _status(env)["replicas"]
            assert isinstance(replicas, list)
            metrics = replicas[0]["metrics"]
            time.sleep(0.5)
        assert sorted(metrics) == [f"{unique}a", f"{unique}b"], metrics
        ports = {int(hostport.rsplit(":", 1)[1]) for hostport in metrics.values()}
        assert len(ports) == 2
        for port in ports:  # each one answers on the port its heartbeat names
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
                assert b"chatlog_ingest_buckets_owned" in answer.read()
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        codes = {w: p.wait(timeout=60) for w, p in procs.items()}
    text = {w: logs[w].read_text() for w in logs}
    assert codes == {"a": 0, "b": 0}, text
    assert not any("Traceback" in t or "Address already in use" in t for t in text.values()), text


def test_an_explicit_metrics_port_that_is_taken_is_one_line_and_exit_2(
    fresh_topics: StackSettings, unique: str
) -> None:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        port = sock.getsockname()[1]
        env = {**_env(fresh_topics, unique), "CHATLOG_METRICS_PORT": str(port)}
        run = chatlog(["ingest", "--replica", "0", "--worker-id", f"{unique}c"], env)
    assert run.code == 2, run.output
    assert run.stderr_lines == [
        f"chatlog: error: cannot listen on 0.0.0.0:{port} (CHATLOG_METRICS_HOST, CHATLOG_METRICS_PORT): "
        "Address already in use"
    ]
