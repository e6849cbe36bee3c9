"""Faults a run injects on a schedule: kill -9 an ingester, start a new one (and the chaos suite's own)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatlog.demo.supervisor import Supervisor

if TYPE_CHECKING:
    from chatlog.demo.run import Run

Action = Callable[["Run", Supervisor], None]


@dataclass(frozen=True)
class Fault:
    at: float  # fraction of the sending time
    label: str
    action: Action


def kill_ingester(worker: str) -> Fault:
    def act(run: Run, sup: Supervisor) -> None:
        sup.kill9(worker)
        run.killed.append((worker, run.workers[worker], time.time()))

    return Fault(0.0, f"kill -9 {worker}", act)


def start_ingester(worker: str, replica: int) -> Fault:
    def act(run: Run, sup: Supervisor) -> None:
        run.start_ingester(sup, worker, replica)

    return Fault(0.0, f"start {worker}", act)


def at(fraction: float, fault: Fault) -> Fault:
    return Fault(fraction, fault.label, fault.action)
