"""The scheduled faults act on any run-like target; the faults module does not import the run."""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lab.demo.faults
from core.settings import StackSettings
from lab.demo.faults import FaultTarget, Outage, at, kill_ingester, kill_sink, start_ingester
from lab.demo.run import Run
from lab.demo.supervisor import Child, Supervisor


@dataclass
class Target:
    settings: StackSettings = field(default_factory=StackSettings)
    workers: dict[str, int] = field(default_factory=lambda: {"r0a": 0, "r0b": 0, "r1a": 1})
    killed: list[tuple[str, int, float]] = field(default_factory=list)
    started: list[tuple[str, int]] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)

    def start_ingester(self, sup: Supervisor, worker: str, replica: int) -> None:
        self.workers[worker] = replica
        self.started.append((worker, replica))


@dataclass
class Sup(Supervisor):
    kills: list[str] = field(default_factory=list)
    restarts: list[tuple[str, list[str]]] = field(default_factory=list)

    def kill9(self, name: str) -> None:
        self.kills.append(name)

    def start(self, name: str, args: Sequence[str], *, env: dict[str, str] | None = None) -> Child:
        self.restarts.append((name, list(args)))
        return Child(name, subprocess.Popen(["true"]), self.log_dir / f"{name}.log")


def as_target(run: Run) -> FaultTarget:
    """Type-checked (mypy): the demo's Run is a fault target."""
    return run


def test_kill_ingester_kills_and_records_the_worker_with_its_replica(tmp_path: Path) -> None:
    fault = at(0.35, kill_ingester("r1a"))
    target, sup = Target(), Sup(tmp_path)
    fault.action(target, sup)
    assert (fault.at, fault.label) == (0.35, "kill -9 r1a")
    assert sup.kills == ["r1a"]
    assert [(w, r) for w, r, _t in target.killed] == [("r1a", 1)]


def test_start_ingester_starts_it_in_its_replica(tmp_path: Path) -> None:
    fault = at(0.65, start_ingester("r0c", 0))
    target = Target()
    fault.action(target, Sup(tmp_path))
    assert fault.label == "start r0c"
    assert target.started == [("r0c", 0)]
    assert target.workers["r0c"] == 0


def test_kill_sink_kills_the_driver_and_starts_it_again_recording_the_outage(tmp_path: Path) -> None:
    target, sup = Target(), Sup(tmp_path)
    kill_sink(down_s=0.0).action(target, sup)
    assert sup.kills == ["sink"]
    assert sup.restarts == [("sink", ["sink"])]
    (outage,) = target.outages
    assert outage.name == "sink" and outage.down_at <= outage.up_at


def test_faults_do_not_import_the_run() -> None:
    source = Path(lab.demo.faults.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert "lab.demo.supervisor" in imported  # the check sees this module's imports
    assert "lab.demo.run" not in imported
