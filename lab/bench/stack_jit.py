"""Which JIT the local stack's Cassandra runs with: a benchmark of reads measures it as deployed.

The lab stack starts its JVMs with ``-XX:TieredStopAtLevel=1`` by default (``CHATLOG_STACK_JAVA_OPTIONS``,
docs/stack.md): C1 only, which spares a short demo or test run the C2 compiler's CPU. A deployment's
Cassandra runs the full JIT, and so must a benchmark that compares reads with another server: measured
here on `chatlog bench vs-justlog`'s past month, C1 cost Cassandra ~2.4 ms of CPU per user-month request
against ~1.5 with the full JIT (docs/benchmarks.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from core.errors import ChatlogError
from lab.stack.process import read_pid

__all__ = ["cassandra_jvm_options", "limiting_flag", "require_full_jit"]

_STOP_AT: Final = "-XX:TieredStopAtLevel="
_FULL_LEVEL: Final = 4
"""The level of C2, the JIT's last tier."""


def cassandra_jvm_options(state_dir: Path) -> list[str] | None:
    """The ``-X`` options on the command line of the stack's running Cassandra (its pid file under
    ``state_dir``); None where the stack runs none (a Cassandra elsewhere: not ours to tell)."""
    pid = read_pid(state_dir / "run" / "cassandra.pid")
    if pid is None:
        return None
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return [arg.decode(errors="replace") for arg in args if arg.startswith(b"-X")]


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


def require_full_jit(state_dir: Path, what: str) -> list[str] | None:
    """The stack's Cassandra's ``-X`` options (:func:`cassandra_jvm_options`); ChatlogError, in one line
    that says how to restart it, where they limit its JIT."""
    options = cassandra_jvm_options(state_dir)
    flag = None if options is None else limiting_flag(options)
    if flag is not None:
        raise ChatlogError(
            f"{what} measures Cassandra as deployed, but the stack's runs with {flag} "
            "(CHATLOG_STACK_JAVA_OPTIONS); restart it with the full JIT: "
            "chatlog stack down && CHATLOG_STACK_JAVA_OPTIONS= chatlog stack up"
        )
    return options
