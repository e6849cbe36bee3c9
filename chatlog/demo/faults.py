"""Faults a run injects on a schedule: kill -9 an ingester, start a new one (and the chaos suite's own).

A fault acts on a :class:`FaultTarget`, the part of a run it needs (:class:`chatlog.demo.run.Run` is
one), so this module does not import the run that imports it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from chatlog.demo.supervisor import Supervisor


class FaultTarget(Protocol):
    """What the faults here change in a run: its ingesters and the record of those it killed."""

    workers: dict[str, int]
    """worker id -> replica group."""
    killed: list[tuple[str, int, float]]
    """(worker id, replica group, epoch s) of every ingester killed."""

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
