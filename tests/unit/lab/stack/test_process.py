"""The stack's process helpers: a child's timer slack."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lab.stack import process

LINUX = pytest.mark.skipif(not Path("/proc/self/timerslack_ns").exists(), reason="timer slack is Linux's")


def _own_slack() -> int:
    return int(Path(f"/proc/{threading.get_native_id()}/timerslack_ns").read_text())


def _slack_of_child(tmp_path: Path, ns: int | None) -> int:
    log = tmp_path / "child.log"
    pid = process.spawn(
        ["cat", "/proc/self/timerslack_ns"],
        log_file=log,
        pid_file=tmp_path / "child.pid",
        timer_slack_ns=ns,
    )
    deadline = time.monotonic() + 10
    while process.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return int(log.read_text().strip())


@LINUX
def test_a_child_started_with_a_timer_slack_has_it_and_this_process_keeps_its_own(tmp_path: Path) -> None:
    own = _own_slack()
    assert _slack_of_child(tmp_path, 1_000_000) == 1_000_000
    assert _own_slack() == own


@LINUX
def test_a_child_started_without_one_has_this_process_s(tmp_path: Path) -> None:
    own = _own_slack()
    assert _slack_of_child(tmp_path, None) == own


def test_the_stack_s_cassandra_asks_for_a_coarser_slack_and_kafka_for_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from core.settings import StackSettings
    from lab.stack.services import Cassandra, Kafka

    # the default, whatever the caller's environment says
    monkeypatch.delenv("CHATLOG_STACK_CASSANDRA_TIMER_SLACK_NS", raising=False)
    settings = StackSettings()
    assert Cassandra(settings).timer_slack_ns == 1_000_000
    assert Kafka(settings).timer_slack_ns is None


def test_a_stack_cassandra_as_deployed_asks_for_no_slack_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.settings import StackSettings
    from lab.stack.services import Cassandra

    monkeypatch.setenv("CHATLOG_STACK_CASSANDRA_TIMER_SLACK_NS", "0")
    assert Cassandra(StackSettings()).timer_slack_ns is None
    monkeypatch.setenv("CHATLOG_STACK_CASSANDRA_TIMER_SLACK_NS", "200000")
    assert Cassandra(StackSettings()).timer_slack_ns == 200_000
