"""Child processes of a demo or chaos run: started with their logs, killed on purpose, all cleaned up."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

CHATLOG = [sys.executable, "-m", "chatlog"]


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class Supervisor:
    """Owns every process it starts; ``close()`` (or leaving the ``with`` block) stops them all."""

    log_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    children: dict[str, Child] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    """How many times each name was started (a restarted process's counters cover its last run only)."""

    def __enter__(self) -> Supervisor:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, name: str, args: Sequence[str], *, env: dict[str, str] | None = None) -> Child:
        if name in self.children and self.children[name].alive:
            raise RuntimeError(f"{name} is already running")
        log = self.log_dir / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [*CHATLOG, *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env, **(env or {})},
                start_new_session=True,
            )
        child = Child(name, proc, log)
        self.children[name] = child
        self.starts[name] = self.starts.get(name, 0) + 1
        return child

    def kill9(self, name: str) -> None:
        """SIGKILL, as a crash would: no goodbye, no flush."""
        child = self.children[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait(timeout=10)

    def terminate(self, name: str, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait (graceful); SIGKILL after ``timeout``. Returns the exit code."""
        child = self.children[name]
        if not child.alive:
            return child.proc.returncode
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGTERM)
        try:
            return child.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9(name)
            return child.proc.returncode

    def close(self) -> None:
        alive = [c for c in self.children.values() if c.alive]
        for child in alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for child in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if child.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.proc.pid, signal.SIGKILL)
                child.proc.wait(timeout=10)
