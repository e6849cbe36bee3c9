"""Running ``chatlog`` as a user does (a subprocess), against services that are not there."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CHATLOG = str(Path(sys.executable).with_name("chatlog"))
DOWN: Mapping[str, str] = {
    "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",  # nothing listens on port 1
    "CHATLOG_CASSANDRA_HOSTS": "127.0.0.1",
    "CHATLOG_CASSANDRA_PORT": "1",
    "CHATLOG_IRC_HOST": "127.0.0.1",
    "CHATLOG_IRC_PORT": "1",
    "CHATLOG_METRICS_PORT": "0",
}
"""Settings that point every client at ports nothing listens on."""


@dataclass(frozen=True)
class Run:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def clean_environ() -> dict[str, str]:
    """The test process's environment without any CHATLOG_* variable."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("CHATLOG_")}


def chatlog(args: Sequence[str], env: Mapping[str, str], *, timeout: float = 60.0) -> Run:
    """``chatlog ARGS`` with exactly ``env`` as its CHATLOG_* variables; stdin is empty."""
    start = time.monotonic()
    proc = subprocess.run(
        [CHATLOG, *args],
        check=False,
        env={**clean_environ(), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
