"""``chatlog serve`` on several processes: uvicorn's workers on one listening socket, so every core answers.

One Python process runs its Python on one core at a time (the GIL). With ``CHATLOG_SERVE_WORKERS`` /
``--workers`` above 1 (0, the default, is one per CPU this process may run on), ``chatlog serve`` binds
the socket and uvicorn's supervisor (:class:`uvicorn.supervisors.Multiprocess`) starts that many worker
processes on it (spawned: fresh interpreters), starts a worker again when one dies, and on SIGTERM or SIGINT
stops them all, each after its responses in flight end (at most :data:`GRACEFUL_SHUTDOWN_S`), then exits
with status 0. A parent that dies without stopping them (SIGKILL, the OOM killer) takes them along: each
worker asks the kernel for SIGTERM when its parent dies (:func:`end_with_parent`), so no orphan keeps
answering on the socket. The parent answers no request and keeps no session. With 1 the app runs in the
``chatlog serve`` process itself, as it always did.

Each worker builds the app from the environment (:func:`worker_app`): before starting them the parent puts
what its flags set into the ``CHATLOG_*`` variables (:func:`worker_environment`), and the directory of
prometheus_client's multiprocess mode into :data:`serve.api.metrics.MULTIPROCESS_DIR` (a temporary
directory, removed when the parent ends), so ``/metrics`` counts the requests of every worker.

What each worker holds for itself, and why N of each is right:

* **Cassandra**: its own session (and prepared statements), opened in the app's lifespan.
* **The opt-out registry** (:mod:`serve.consent`, :mod:`consent.registry`): each worker reads the
  compacted topic whole and follows it, its partitions assigned under a group id of its own that it never
  joins, so every worker enforces every opt-out. An opt-out or a lift made through one worker's admin routes
  reaches the others through the topic, as it reaches another ``chatlog serve``: within a poll (a lift sent
  to a worker that has not seen the opt-out yet is a 404).
* **The fresh reader** (:mod:`serve.unwritten`): one consumer per worker that reads the offsets the sink
  committed under the sink's group id and assigns itself one partition per read. It never subscribes, so it
  joins no group and no partition is shared out between workers: each reads any channel's unwritten events.
* **The live hub** (:mod:`serve.live`): one Kafka consumer per worker, started by that worker's first live
  subscriber, every partition assigned, no group: a subscriber gets every event of its channel whichever
  worker holds its connection. ``CHATLOG_SERVE_LIVE_MAX_SUBSCRIBERS`` counts per worker.
* **Caches** (the channel list and name lookups, ``CHATLOG_SERVE_CHANNELS_TTL_S``; partition counts): per
  worker, so two answers may come from lists up to that TTL apart, as from two ``chatlog serve``.
* **The limits on self-service opt-out codes** (``CHATLOG_OPTOUT_CODE_RATE`` and ``..._TOTAL``,
  :class:`serve.api.optout.CodeRates`): counted in each worker's memory, so N workers allow up to N times
  the rate (a client on one keep-alive connection stays with one worker: its own limit holds there).
* **Metrics**: per worker, summed by ``/metrics`` (:mod:`serve.api.metrics`).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from core.errors import ChatlogError
from serve.api.metrics import MULTIPROCESS_DIR

if TYPE_CHECKING:
    from fastapi import FastAPI

    from serve.settings import ServeSettings

WORKER_APP: Final = "serve.api.workers:worker_app"
"""The app factory each worker calls (uvicorn's ``factory=True``)."""
GRACEFUL_SHUTDOWN_S: Final = 30
"""On SIGTERM/SIGINT: the longest wait for responses in flight (k8s' termination grace period is above)."""
_PR_SET_PDEATHSIG: Final = 1  # prctl(2), linux/prctl.h


def uvicorn_options(settings: ServeSettings) -> dict[str, Any]:
    """uvicorn's options of ``chatlog serve``, one process or several."""
    return {
        "host": settings.serve_host,
        "port": settings.serve_port,
        "log_level": settings.serve_log_level,
        "proxy_headers": True,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
    }


def worker_environment(settings: ServeSettings) -> dict[str, str]:
    """The ``CHATLOG_*`` variables that make a worker's settings the parent's: those its flags may set
    (``--host``, ``--port``, ``--keyspace``); the rest the workers read from the environment they inherit."""
    return {
        "CHATLOG_SERVE_HOST": settings.serve_host,
        "CHATLOG_SERVE_PORT": str(settings.serve_port),
        "CHATLOG_CASSANDRA_KEYSPACE": settings.cassandra_keyspace,
    }


def worker_app() -> FastAPI:
    """The app of one worker, its settings from the environment; it opens its own Cassandra session, reads
    the opt-out registry and starts its fresh reader when it starts (:func:`serve.api.app.create_app`).
    Logs as ``chatlog serve`` itself does: chatlog's lines on stderr, secrets masked, no driver tracebacks."""
    from core import redact
    from core.cql import quiet_driver_logs
    from core.log_setup import log_to_stderr
    from core.settings import load
    from serve.api.app import create_app
    from serve.settings import ServeSettings

    end_with_parent()
    log_to_stderr()
    redact.install()
    quiet_driver_logs()
    return create_app(load(ServeSettings), freeze=True)


def end_with_parent() -> None:
    """Have the kernel send this worker SIGTERM (a graceful stop, as the parent's own would be) when the
    process that started it dies (``prctl(PR_SET_PDEATHSIG)``; where libc has no prctl, nothing); a worker
    whose parent died before that exits at once."""
    prctl = getattr(ctypes.CDLL(None), "prctl", None)
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        raise SystemExit(1)


def serve_on_workers(settings: ServeSettings, workers: int, *, app: str = WORKER_APP) -> None:
    """Serve the app factory ``app`` (an import string) on ``workers`` processes until SIGTERM or SIGINT
    (see the module doc). A worker that fails to start stops them all: a :class:`ChatlogError` then (its
    own log says why)."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    metrics_dir = tempfile.mkdtemp(prefix="chatlog-serve-metrics-")
    try:
        with _environment({**worker_environment(settings), MULTIPROCESS_DIR: metrics_dir}):
            config = uvicorn.Config(app, factory=True, workers=workers, **uvicorn_options(settings))
            sock = config.bind_socket()
            try:
                supervisor = Multiprocess(config, sockets=[sock])
                supervisor.run()
            finally:
                sock.close()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
    failed = [str(p.pid) for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        pids = ", ".join(failed)
        raise ChatlogError(
            f"chatlog serve stopped: a worker failed to start (pid {pids}; its log above says why)"
        )


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` (inherited by the processes started meanwhile) until the block ends."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
