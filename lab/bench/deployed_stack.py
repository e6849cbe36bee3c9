"""How the local stack's Cassandra runs, for a benchmark of reads: its JIT as deployed, its timer slack told.

The lab stack starts Cassandra in two ways a deployment does not (docs/stack.md), each sparing a demo or a
test run CPU:

* ``-XX:TieredStopAtLevel=1`` (``CHATLOG_STACK_JAVA_OPTIONS``): C1 only. Measured on `chatlog bench
  vs-justlog`'s past month, C1 cost Cassandra ~2.4 ms of CPU per user-month request against ~1.5 with the
  full JIT (docs/benchmarks.md): a benchmark that compares reads with another server refuses it.
* a timer slack of 1 ms (``CHATLOG_STACK_CASSANDRA_TIMER_SLACK_NS``): its request threads' 10 µs sleeps
  between tasks last ~1 ms, so a request that finds them asleep waits ~1 ms more (a native-protocol OPTIONS
  1.07 ms p50 against 0.10 ms once the same node's threads had the kernel's 50 µs), and at 50 µs those
  sleeps wake 20 times as often. Neither is a deployment's case on this machine: a deployed node has cores
  of its own, so its wait-spins take no CPU from the server that reads, while here they share two cores
  with it and the load. Measured both ways (docs/benchmarks.md), so the slack is not refused but told: it is
  kept in the result beside the JVM's options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from core.errors import ChatlogError
from lab.stack.process import read_pid

__all__ = ["cassandra_jvm_options", "cassandra_timer_slack_ns", "limiting_flag", "require_deployed"]

_STOP_AT: Final = "-XX:TieredStopAtLevel="
_FULL_LEVEL: Final = 4
"""The level of C2, the JIT's last tier."""


def _proc_file(state_dir: Path, name: str) -> bytes | None:
    """``/proc/<pid>/<name>`` of the stack's running Cassandra (its pid file under ``state_dir``); None where
    the stack runs none (a Cassandra elsewhere: not ours to tell)."""
    pid = read_pid(state_dir / "run" / "cassandra.pid")
    if pid is None:
        return None
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return None


def cassandra_jvm_options(state_dir: Path) -> list[str] | None:
    """The ``-X`` options on the command line of the stack's running Cassandra; None where the stack runs
    none."""
    cmdline = _proc_file(state_dir, "cmdline")
    if cmdline is None:
        return None
    return [arg.decode(errors="replace") for arg in cmdline.split(b"\0") if arg.startswith(b"-X")]


def cassandra_timer_slack_ns(state_dir: Path) -> int | None:
    """The timer slack of the stack's running Cassandra's main thread (its other threads inherit it), in
    nanoseconds; None where the stack runs none or the kernel does not tell."""
    slack = _proc_file(state_dir, "timerslack_ns")
    return None if slack is None or not slack.strip().isdigit() else int(slack)


def limiting_flag(options: list[str]) -> str | None:
    """The option among ``options`` that keeps the JIT from compiling with C2 (the last
    ``-XX:TieredStopAtLevel`` below 4, or ``-Xint``), or None."""
    if "-Xint" in options:
        return "-Xint"
    found: str | None = None
    for option in options:
        if option.startswith(_STOP_AT):
            level = option[len(_STOP_AT) :]
            found = option if level.isdigit() and int(level) < _FULL_LEVEL else None
    return found


def require_deployed(state_dir: Path, what: str) -> dict[str, Any]:
    """The stack's Cassandra's ``-X`` options and timer slack (``jvm_options``, ``timer_slack_ns``: None where
    the stack runs none); ChatlogError, in one line that says how to restart it, where its JIT is limited."""
    options = cassandra_jvm_options(state_dir)
    flag = None if options is None else limiting_flag(options)
    if flag is not None:
        raise ChatlogError(
            f"{what} measures Cassandra as deployed, but the stack's runs with {flag} "
            "(CHATLOG_STACK_JAVA_OPTIONS); restart it with the full JIT: "
            "chatlog stack down && CHATLOG_STACK_JAVA_OPTIONS= chatlog stack up"
        )
    return {"jvm_options": options, "timer_slack_ns": cassandra_timer_slack_ns(state_dir)}
