"""lab/bench/deployed_stack.py: a read benchmark refuses a stack Cassandra whose JIT stops at C1, and tells
its timer slack."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.errors import ChatlogError
from lab.bench.deployed_stack import (
    cassandra_jvm_options,
    cassandra_timer_slack_ns,
    limiting_flag,
    require_deployed,
)
from lab.stack import process


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        ([], None),
        (["-Xmx1G", "-XX:+UseG1GC"], None),
        (["-XX:TieredStopAtLevel=1"], "-XX:TieredStopAtLevel=1"),
        (["-XX:TieredStopAtLevel=3"], "-XX:TieredStopAtLevel=3"),
        (["-XX:TieredStopAtLevel=4"], None),
        (["-XX:TieredStopAtLevel=1", "-XX:TieredStopAtLevel=4"], None),  # the last one counts, as in the JVM
        (["-XX:TieredStopAtLevel=4", "-XX:TieredStopAtLevel=1"], "-XX:TieredStopAtLevel=1"),
        (["-Xint", "-XX:TieredStopAtLevel=4"], "-Xint"),
    ],
)
def test_the_flag_that_limits_the_jit_is_found(options: list[str], flag: str | None) -> None:
    assert limiting_flag(options) == flag


LINUX = pytest.mark.skipif(not Path("/proc/self/timerslack_ns").exists(), reason="timer slack is Linux's")


@pytest.fixture
def cassandra(tmp_path: Path) -> Iterator[Callable[..., None]]:
    """Starts a stand-in "Cassandra" (a sleeping process whose command line carries the given arguments,
    with the given timer slack, else this process's) and records its pid where the stack keeps Cassandra's."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str, slack_ns: int | None = None) -> None:
        with process.timer_slack(slack_ns):
            proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])
        procs.append(proc)
        (tmp_path / "run").mkdir(exist_ok=True)
        (tmp_path / "run" / "cassandra.pid").write_text(f"{proc.pid}\n")

    try:
        yield start
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_the_running_cassandras_options_are_read_from_its_command_line(
    tmp_path: Path, cassandra: Callable[..., None]
) -> None:
    cassandra("-Xmx2G", "org.apache.cassandra.service.CassandraDaemon", "-XX:TieredStopAtLevel=1")
    assert cassandra_jvm_options(tmp_path) == ["-Xmx2G", "-XX:TieredStopAtLevel=1"]


def test_no_stack_cassandra_is_not_refused(tmp_path: Path) -> None:
    assert cassandra_jvm_options(tmp_path) is None
    assert cassandra_timer_slack_ns(tmp_path) is None
    assert require_deployed(tmp_path, "chatlog bench vs-justlog") == {
        "jvm_options": None,
        "timer_slack_ns": None,
    }


def test_a_c1_only_cassandra_is_refused_in_one_line_that_says_how_to_restart_it(
    tmp_path: Path, cassandra: Callable[..., None]
) -> None:
    cassandra("-XX:TieredStopAtLevel=1")
    with pytest.raises(ChatlogError) as refused:
        require_deployed(tmp_path, "chatlog bench vs-justlog")
    said = str(refused.value)
    assert "\n" not in said
    assert said.startswith("chatlog bench vs-justlog measures Cassandra as deployed")
    assert "-XX:TieredStopAtLevel=1" in said
    assert "CHATLOG_STACK_JAVA_OPTIONS= chatlog stack up" in said


@LINUX
@pytest.mark.parametrize("slack_ns", [50_000, 1_000_000])
def test_a_full_jit_cassandra_is_measured_its_options_and_timer_slack_kept(
    tmp_path: Path, cassandra: Callable[..., None], slack_ns: int
) -> None:
    cassandra("-Xss256k", slack_ns=slack_ns)
    assert cassandra_timer_slack_ns(tmp_path) == slack_ns
    assert require_deployed(tmp_path, "chatlog bench vs-justlog") == {
        "jvm_options": ["-Xss256k"],
        "timer_slack_ns": slack_ns,
    }
