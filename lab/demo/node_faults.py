"""Faults on the nodes of the multi-node stack (``chatlog stack up --nodes 3``) during a run: kill -9 the
Kafka broker that leads the most partitions of the run's message topic, hang one (SIGSTOP, then SIGCONT),
kill -9 a Cassandra node, or a Spark worker (with its executor) while it runs a task of a batch, each started
again after a while. Every
fault records its outage on the run: the node, when it went down and when the cluster had it back."""

from __future__ import annotations

import signal
import time

from lab.demo.faults import Fault, FaultTarget, Outage
from lab.demo.supervisor import Supervisor
from lab.stack import nodes
from lab.stack.cluster import Layout


def kill_and_restart(layout: Layout, name: str, down_s: float) -> Fault:
    """kill -9 node ``name``; ``down_s`` later start it again and wait until the cluster has it back."""

    def act(run: FaultTarget, _sup: Supervisor) -> None:
        t0 = time.time()
        nodes.kill_node(layout, name)
        time.sleep(down_s)
        nodes.start_missing(layout)
        run.outages.append(Outage(name, t0, time.time()))

    return Fault(0.0, f"kill -9 {name}, {down_s:.0f}s down", act)


def kill_leading_broker(layout: Layout, down_s: float) -> Fault:
    """kill -9 the broker that leads the most partitions of the run's message topic (found when the fault
    strikes), start it again ``down_s`` later."""

    def act(run: FaultTarget, sup: Supervisor) -> None:
        name = nodes.leading_broker(layout, run.settings.topic_messages)
        kill_and_restart(layout, name, down_s).action(run, sup)

    return Fault(0.0, f"kill -9 the leading broker, {down_s:.0f}s down", act)


def pause_leading_broker(layout: Layout, seconds: float) -> Fault:
    """SIGSTOP the broker that leads the most partitions of the run's message topic (a node that hangs
    rather than dies: its connections stay open), SIGCONT ``seconds`` later."""

    def act(run: FaultTarget, _sup: Supervisor) -> None:
        name = nodes.leading_broker(layout, run.settings.topic_messages)
        t0 = time.time()
        nodes.signal_node(layout, name, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            nodes.signal_node(layout, name, signal.SIGCONT)
        run.outages.append(Outage(name, t0, time.time()))

    return Fault(0.0, f"SIGSTOP the leading broker {seconds:.0f}s", act)


def kill_busy_spark_worker(layout: Layout, worker: str, down_s: float, wait_s: float = 30.0) -> Fault:
    """kill -9 Spark worker ``worker`` and its executor as soon as the executor runs a task (a batch is
    running; at most ``wait_s`` of waiting), start it again ``down_s`` later."""

    def act(run: FaultTarget, sup: Supervisor) -> None:
        deadline = time.monotonic() + wait_s
        while not nodes.executor_busy(layout, worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        kill_and_restart(layout, worker, down_s).action(run, sup)

    return Fault(0.0, f"kill -9 {worker} during a task, {down_s:.0f}s down", act)
