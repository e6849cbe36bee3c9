"""The scheduled faults act on any run-like target; the faults module does not import the run."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import chatlog.demo.faults
from chatlog.demo.faults import FaultTarget, at, kill_ingester, start_ingester
from chatlog.demo.run import Run
from chatlog.demo.supervisor import Supervisor


@dataclass
class Target:
    workers: dict[str, int] = field(default_factory=lambda: {"r0a": 0, "r0b": 0, "r1a": 1})
    killed: list[tuple[str, int, float]] = field(default_factory=list)
    started: list[tuple[str, int]] = field(default_factory=list)

    def start_ingester(self, sup: Supervisor, worker: str, replica: int) -> None:
        self.workers[worker] = replica
        self.started.append((worker, replica))


@dataclass
class Sup(Supervisor):
    kills: list[str] = field(default_factory=list)

    def kill9(self, name: str) -> None:
        self.kills.append(name)


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


def test_faults_do_not_import_the_run() -> None:
    source = Path(chatlog.demo.faults.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert "chatlog.demo.supervisor" in imported  # the check sees this module's imports
    assert "chatlog.demo.run" not in imported
