"""``chatlog serve`` on worker processes seen from outside (:mod:`serve.api.workers`), for the tests that run
it as a subprocess: its workers, which of them answered, what ``/metrics`` counts, a stop by signal, and the
workers left after their parent ended."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

from serve.api.metrics import MULTIPROCESS_DIR


def worker_pids(parent: int) -> list[int]:
    """The worker processes of ``parent``: its children that multiprocessing spawned (not its resource
    tracker)."""
    return sorted(p.pid for p in psutil.Process(parent).children() if "spawn_main" in " ".join(p.cmdline()))


def metrics_dir(worker: int) -> Path:
    """The multiprocess metrics directory a worker was started with (from its environment)."""
    return Path(psutil.Process(worker).environ()[MULTIPROCESS_DIR])


def answered_by(directory: Path) -> set[int]:
    """The workers that counted a request: each has its counter file, named by its pid, once it has."""
    return {int(p.stem.removeprefix("counter_")) for p in directory.glob("counter_*.db")}


def requests_counted(base: str, route: str) -> float:
    """``chatlog_serve_requests_total`` of ``route``, every status, as ``/metrics`` reports it."""
    body = httpx.get(f"{base}/metrics", timeout=30).text
    return sum(
        s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name == "chatlog_serve_requests_total" and s.labels["route"] == route
    )


def wait_until_serving(proc: subprocess.Popen[bytes], base: str, log: Path, workers: int) -> list[int]:
    """Wait until ``/health`` answers 200 and ``workers`` workers run; their pids."""
    deadline = time.monotonic() + 90
    while True:
        assert proc.poll() is None, f"chatlog serve exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"chatlog serve did not answer: {log.read_text()[-3000:]}"
        try:
            healthy = httpx.get(f"{base}/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            healthy = False
        pids = worker_pids(proc.pid)
        if healthy and len(pids) == workers:
            return pids
        time.sleep(0.3)


def request_until_every_worker_answered(base: str, path: str, workers: list[int], most: int = 400) -> int:
    """GET ``path`` (200 expected), each on a new connection, until every one of ``workers`` has answered
    one; how many requests that took."""
    directory = metrics_dir(workers[0])
    sent = 0
    while answered_by(directory) != set(workers):
        assert sent < most, f"{most} requests answered by {answered_by(directory)} of {workers} only"
        response = httpx.get(f"{base}{path}", timeout=60)
        assert response.status_code == 200, response.text[:500]
        sent += 1
    return sent


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals, workers: list[int], log: Path) -> int:
    """Send ``sig`` to ``chatlog serve``; once it exits, none of ``workers`` is left. Its exit status."""
    proc.send_signal(sig)
    try:
        status = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"chatlog serve did not stop on {sig.name}: {log.read_text()[-3000:]}") from None
    left = [pid for pid in workers if psutil.pid_exists(pid)]
    assert left == [], f"workers {left} outlived chatlog serve"
    return status


def left_after(workers: list[int], seconds: float) -> list[int]:
    """Those of ``workers`` that still run once all have ended or ``seconds`` have passed (a zombie, ended and
    not yet reaped by the init it went to, does not run)."""
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in workers if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
