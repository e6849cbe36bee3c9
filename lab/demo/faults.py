"""Faults a run injects on a schedule: kill -9 an ingester, start a new one, kill -9 the sink (the Spark
driver) and start it again on its checkpoint, stop a service of the stack for a while. The multi-node
stack's own faults (a broker, a Cassandra node, a Spark worker) are in :mod:`lab.demo.node_faults`.

A fault acts on a :class:`FaultTarget`, the part of a run it needs (:class:`lab.demo.run.Run` is
one), so this module does not import the run that imports it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from core.settings import StackSettings
from lab.demo.supervisor import Supervisor
from lab.stack import manager


@dataclass(frozen=True)
class Outage:
    """A process of the pipeline or node of the stack that was down (or hung) from ``down_at`` until it
    answered again at ``up_at`` (epoch s)."""

    name: str
    down_at: float
    up_at: float


class FaultTarget(Protocol):
    """What the faults here change in a run: its ingesters, the record of those it killed and of every
    outage, and its settings (its topics)."""

    settings: StackSettings
    workers: dict[str, int]
    """worker id -> replica group."""
    killed: list[tuple[str, int, float]]
    """(worker id, replica group, epoch s) of every ingester killed."""
    outages: list[Outage]

    def start_ingester(self, sup: Supervisor, worker: str, replica: int) -> None: ...


Action = Callable[[FaultTarget, Supervisor], None]


@dataclass(frozen=True)
class Fault:
    at: float  # fraction of the sending time
    label: str
    action: Action


def kill_ingester(worker: str) -> Fault:
    def act(run: FaultTarget, sup: Supervisor) -> None:
        sup.kill9(worker)
        run.killed.append((worker, run.workers[worker], time.time()))

    return Fault(0.0, f"kill -9 {worker}", act)


def start_ingester(worker: str, replica: int) -> Fault:
    def act(run: FaultTarget, sup: Supervisor) -> None:
        run.start_ingester(sup, worker, replica)

    return Fault(0.0, f"start {worker}", act)


def at(fraction: float, fault: Fault) -> Fault:
    return Fault(fraction, fault.label, fault.action)


def kill_sink(down_s: float = 3.0) -> Fault:
    """kill -9 the sink (the Spark driver: on a cluster its executors go with it), start it again after
    ``down_s`` on the same checkpoint."""

    def act(run: FaultTarget, sup: Supervisor) -> None:
        t0 = time.time()
        sup.kill9("sink")
        time.sleep(down_s)
        sup.start("sink", ["sink"])
        run.outages.append(Outage("sink", t0, time.time()))

    return Fault(0.0, "kill -9 sink, restart", act)


def restart_service(name: str, stack: StackSettings, down_s: float, *, kill: bool = False) -> Fault:
    """Stop a service of the single stack (SIGTERM, or SIGKILL with ``kill``); start it again ``down_s``
    later."""

    def act(run: FaultTarget, _sup: Supervisor) -> None:
        t0 = time.time()
        manager.stop_service(stack, name, kill=kill)
        time.sleep(down_s)
        manager.up(stack, report=lambda _m: None)
        run.outages.append(Outage(name, t0, time.time()))

    return Fault(0.0, f"{'kill -9' if kill else 'stop'} {name} {down_s:.0f}s", act)
