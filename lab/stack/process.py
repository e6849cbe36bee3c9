"""Background processes started by the stack: pid files, ports, start and stop."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

_PR_SET_TIMERSLACK = 29
_PR_GET_TIMERSLACK = 30


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0): look at its state.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def read_pid(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` if that process is still alive."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def rss_mib(pid: int) -> float | None:
    """Resident memory of ``pid`` in MiB (from /proc)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def raise_fd_limit() -> None:
    """Raise this process's open-file limit to the hard limit; children inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1_048_576
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, target), hard))


@contextlib.contextmanager
def timer_slack(ns: int | None) -> Iterator[None]:
    """This thread's timer slack set to ``ns`` nanoseconds for the block, so that a child started in it has
    that slack (a forked child and its threads inherit the value, execve keeps it: prctl(2)). Where prctl is
    missing (not Linux), or ``ns`` is None, nothing changes."""
    if ns is None:
        yield
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not hasattr(libc, "prctl"):
        yield
        return
    before = libc.prctl(_PR_GET_TIMERSLACK, 0, 0, 0, 0)
    libc.prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0)
    try:
        yield
    finally:
        if before > 0:
            libc.prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(before), 0, 0, 0)


def spawn(
    cmd: Sequence[str],
    *,
    log_file: Path,
    pid_file: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timer_slack_ns: int | None = None,
) -> int:
    """Start ``cmd`` detached in its own session, output appended to ``log_file``; returns its pid.
    ``timer_slack_ns``: the child's timer slack (:func:`timer_slack`), else this process's."""
    raise_fd_limit()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as out, timer_slack(timer_slack_ns):
        proc = subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )
    pid_file.write_text(str(proc.pid))
    return proc.pid


def stop(pid: int, *, timeout: float = 30.0) -> bool:
    """SIGTERM the process group of ``pid``, SIGKILL after ``timeout``; True if it was running."""
    if not pid_alive(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            return True
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _reap(pid)
    return True


def stop_all(pids: list[int], *, timeout: float = 30.0) -> None:
    """:func:`stop` for several processes at once: SIGTERM to every group, SIGKILL to those still
    running after ``timeout``."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in pids:
            _reap(pid)
        if not any(pid_alive(pid) for pid in pids):
            return
        time.sleep(0.2)
    for pid in pids:
        if pid_alive(pid):
            stop(pid, timeout=0)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def last_error(path: Path) -> str:
    """The most telling line at the end of a log: the last error-like line, else the last line."""
    lines = [ln.strip() for ln in tail(path, 80).splitlines() if ln.strip()]
    keys = ("error", "exception", "invalid", "fatal", "failed", "refused", "cannot")
    for line in reversed(lines):
        if any(k in line.lower() for k in keys):
            return line[:300]
    return lines[-1][:300] if lines else "(empty log)"
