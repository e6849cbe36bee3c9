"""Node control on the multi-node stack, for its fault tests: which Kafka broker leads the most partitions
of a topic, whether a Spark worker's executor is running a task, a signal to one node's processes (kill -9,
SIGSTOP, SIGCONT), and starting the nodes that are down again (``chatlog stack up --nodes N`` does the
same)."""

from __future__ import annotations

import os
import re
import signal
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from core.errors import StackError
from lab.stack import manager, process
from lab.stack.cluster import Layout


def busiest_leader(leaders: Iterable[int]) -> int:
    """The broker id that appears most among the partitions' ``leaders`` (the lowest id of a tie); -1 (a
    partition without a leader) never counts."""
    counts = Counter(b for b in leaders if b >= 0)
    if not counts:
        raise StackError("no partition has a leader")
    return min(counts, key=lambda b: (-counts[b], b))


def leading_broker(layout: Layout, topic: str) -> str:
    """The name (``kafka-<id>``) of the broker that leads the most partitions of ``topic`` now."""
    from core.kafka_admin import admin_client

    admin = admin_client(layout.client_settings())
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    if meta.error is not None:
        raise StackError(f"{topic}: {meta.error}")
    return f"kafka-{busiest_leader(p.leader for p in meta.partitions.values())}"


_TID = re.compile(r"\(TID (\d+)\)")
_ENDED = ("Finished task", "killed task", "Exception in task", "Error in task")


def running_tasks(executor_log: str) -> set[int]:
    """The task ids an executor's log shows as started and not yet finished, failed or killed."""
    running: set[int] = set()
    for line in executor_log.splitlines():
        match = _TID.search(line)
        if match is None:
            continue
        if "Running task" in line:
            running.add(int(match.group(1)))
        elif any(word in line for word in _ENDED):
            running.discard(int(match.group(1)))
    return running


def executor_log(layout: Layout, worker: str) -> Path | None:
    """The log (``stderr``) of the newest executor that Spark worker ``worker`` started, if any."""
    svc = next((w for w in layout.spark_workers if w.name == worker), None)
    if svc is None:
        raise StackError(f"no Spark worker {worker!r} in this cluster")
    logs = list((svc.home / "work").glob("app-*/*/stderr"))
    return max(logs, key=lambda p: p.stat().st_mtime) if logs else None


def executor_busy(layout: Layout, worker: str) -> bool:
    """True when the newest executor of Spark worker ``worker`` is running a task now (its log says so)."""
    log = executor_log(layout, worker)
    return log is not None and bool(running_tasks(log.read_text(errors="replace")))


def signal_node(layout: Layout, name: str, sig: signal.Signals) -> int:
    """Send ``sig`` to the process group of node ``name`` (a JVM, with a Spark worker's executors and their
    Python workers); returns its pid. SIGKILL goes through :func:`kill_node`."""
    svc = next((s for s in layout.services() if s.name == name), None)
    if svc is None:
        raise StackError(f"no node {name!r} in a cluster of {layout.nodes}")
    pid = process.read_pid(svc.pid_file)
    if pid is None:
        raise StackError(f"{name} is not running")
    os.killpg(pid, sig)
    return pid


def kill_node(layout: Layout, name: str) -> None:
    """kill -9 node ``name`` (and its process group), as a crash of its machine would."""
    manager.stop_service(layout.settings, name, kill=True, nodes=layout.nodes)


def start_missing(layout: Layout) -> None:
    """Start every node that is not running and wait until the cluster has formed again."""
    manager.up(layout.settings, report=lambda _line: None, nodes=layout.nodes)
