"""lab/stack/nodes.py: the broker that leads the most partitions, signals to a node of the cluster."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from core.errors import StackError
from core.settings import StackSettings
from lab.stack.cluster import Layout
from lab.stack.nodes import busiest_leader, executor_busy, running_tasks, signal_node


def test_the_busiest_leader_leads_the_most_partitions() -> None:
    assert busiest_leader([1, 2, 2, 3, 2, 1]) == 2


def test_a_tie_goes_to_the_lowest_broker_id_and_leaderless_partitions_do_not_count() -> None:
    assert busiest_leader([3, 1, 3, 1, -1, -1, -1]) == 1
    with pytest.raises(StackError, match="no partition has a leader"):
        busiest_leader([-1, -1])


def test_a_signal_needs_a_node_of_the_cluster_that_runs(tmp_path: Path) -> None:
    layout = Layout(StackSettings(state_dir=tmp_path), 3)
    with pytest.raises(StackError, match="no node 'kafka-4'"):
        signal_node(layout, "kafka-4", signal.SIGSTOP)
    with pytest.raises(StackError, match="kafka-2 is not running"):
        signal_node(layout, "kafka-2", signal.SIGSTOP)


LOG = """26/11/27 02:07:10 INFO Executor: Running task 0.0 in stage 4.0 (TID 8)
26/11/27 02:07:10 INFO Executor: Running task 1.0 in stage 4.0 (TID 9)
26/11/27 02:07:11 INFO Executor: Finished task 1.0 in stage 4.0 (TID 9). 14070 bytes result sent to driver
26/11/27 02:07:12 INFO Executor: Running task 0.0 in stage 5.0 (TID 10)
26/11/27 02:07:13 ERROR Executor: Exception in task 0.0 in stage 5.0 (TID 10)
"""


def test_running_tasks_are_started_and_not_finished_or_failed() -> None:
    assert running_tasks(LOG) == {8}
    killed = "02:07:14 INFO Executor: Executor killed task 0.0 in stage 4.0 (TID 8), reason: stage cancelled"
    assert running_tasks(f"{LOG}{killed}\n") == set()
    assert (
        running_tasks(LOG + "26/11/27 02:07:14 INFO Executor: Finished task 0.0 in stage 4.0 (TID 8).\n")
        == set()
    )


def test_a_worker_is_busy_when_its_newest_executor_runs_a_task(tmp_path: Path) -> None:
    layout = Layout(StackSettings(state_dir=tmp_path), 3)
    assert not executor_busy(layout, "spark-worker-1")
    log = tmp_path / "cluster" / "spark-worker-1" / "work" / "app-1" / "0" / "stderr"
    log.parent.mkdir(parents=True)
    log.write_text(LOG)
    assert executor_busy(layout, "spark-worker-1")
    with pytest.raises(StackError, match="no Spark worker 'spark-worker-9'"):
        executor_busy(layout, "spark-worker-9")
