"""CPU time of each part of the local pipeline during a run (a benchmark, the demo), per event.

On one machine the sink, Cassandra and Kafka share the cores, so a rate alone does not say where the
time goes. :func:`snapshot` reads the CPU time (user + system) of every process of the local stack and
of this run, grouped by what it is; :func:`per_event` turns two snapshots into µs per event.

Processes come and go during a run (pyspark's daemon forks its workers and reaps them; a pool is
made per run). Each snapshot holds every counted process's own time plus the time of the children it
reaped. A process that exited between two snapshots counts as much as it reaped into a counted parent
(its CPU before the first snapshot taken off again); one that no counted process reaped is missed (not
taken off: before, such a process made the raw insert's per-row run read -883 µs per event), so the
figures are lower bounds.

Only this run's processes count: this process and its descendants (the Spark JVM, its Python workers, a
pool), and the local stack's services by their pid files. Another program's Spark, Python workers or
Kafka and Cassandra nodes on the same machine (a test run, a second stack) are not counted, even though
their command lines look the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lab import extras

COMPONENTS = ("spark_jvm", "python_workers", "cassandra", "kafka", "bench")
"""What a benchmark of the sink reports, in this order."""
PIPELINE_PARTS = (
    "ingesters",
    "kafka",
    "sink_driver",
    "spark_jvm",
    "python_workers",
    "cassandra",
    "serve",
    "jvm_jit",
)
"""The parts whose sum is the pipeline's CPU per stored message (the simulator, the IRC server and the demo's
own probes are the lab around it; ``jvm_jit``: the JIT compiler threads of the pipeline's JVMs, taken out of
their parts)."""
PIPELINE = ("simulator", "irc_server", *PIPELINE_PARTS, "demo")
"""What the demo reports, in this order (``demo``: the demo's own process, its read probe and observer)."""
JVMS = ("kafka", "cassandra", "spark_jvm")
"""The parts that are JVMs: the CPU time of their JIT compiler threads is counted as ``jvm_jit``. A JVM
compiles its hot code during its first minutes, so on a stack started just before a run this is a one-off
cost the run pays, not one per message; it is reported apart to say so."""
_COMPILER_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
"""How /proc names (15 characters) HotSpot's JIT compiler threads."""
_ALL = (*dict.fromkeys((*PIPELINE, *COMPONENTS)),)

_MARKERS: tuple[tuple[str, str], ...] = (
    ("org.apache.cassandra.service.CassandraDaemon", "cassandra"),
    ("kafka.Kafka", "kafka"),
    ("org.apache.spark.deploy.SparkSubmit", "spark_jvm"),
    ("pyspark.daemon", "python_workers"),
    ("pyspark.worker", "python_workers"),
    ("multiprocessing.spawn", "python_workers"),  # the raw insert's pool
    ("chatlog ingest", "ingesters"),
    ("chatlog simulate", "simulator"),
    ("chatlog sink", "sink_driver"),
    ("chatlog serve", "serve"),
    ("inspircd", "irc_server"),
)
"""A command-line fragment -> the component of the process (the first match wins)."""


def component(cmdline: Sequence[str]) -> str | None:
    """The component a process with ``cmdline`` belongs to (None: not part of the pipeline)."""
    text = " ".join(cmdline)
    for marker, name in _MARKERS:
        if marker in text:
            return name
    return None


@dataclass(frozen=True, slots=True)
class Proc:
    """One counted process in a snapshot."""

    component: str
    parent: int
    started: float
    """Its start time (a pid can be taken again by a new process)."""
    seconds: float
    """CPU time (user + system), its own and that of the children it reaped."""
    compilers: tuple[tuple[int, float], ...] = ()
    """Its live JIT compiler threads (a JVM of :data:`JVMS`) and the CPU time of each, part of ``seconds``.
    A compiler thread that ended is no longer seen: its time since the last snapshot stays in ``seconds``
    only, so the JIT's time is a lower bound."""

    def jit_since(self, before: Proc | None) -> float:
        """CPU seconds of its compiler threads since ``before`` (the same process earlier; None: its whole
        life): each live thread's own growth, so a thread that ended takes nothing off."""
        earlier = dict(before.compilers) if before is not None else {}
        return sum(seconds - earlier.get(tid, 0.0) for tid, seconds in self.compilers)


Snapshot = dict[int, Proc]
"""pid -> the process, for every process of the pipeline and this benchmark."""


def _stack_pids() -> set[int]:
    """The pids of the local stack's running services (from their pid files)."""
    from core.settings import StackSettings
    from lab.stack import process
    from lab.stack.services import all_services

    pids = (process.read_pid(s.pid_file) for s in all_services(StackSettings()))
    return {pid for pid in pids if pid is not None}


def snapshot(me_as: str = "bench") -> Snapshot:
    """The CPU seconds so far of every counted process (this process counts as ``me_as``)."""
    extras.require_cpu_accounting()
    import psutil

    found: Snapshot = {}
    me = os.getpid()
    ours = _stack_pids() | {p.pid for p in psutil.Process(me).children(recursive=True)}
    for proc in psutil.process_iter(["pid", "ppid", "cmdline", "create_time"]):
        pid = proc.info["pid"]
        name = me_as if pid == me else component(proc.info["cmdline"] or ()) if pid in ours else None
        if name is None:
            continue
        try:
            t = proc.cpu_times()
        except psutil.Error:  # exited while we looked
            continue
        seconds = t.user + t.system + t.children_user + t.children_system
        compilers = compiler_threads(pid) if name in JVMS else ()
        found[pid] = Proc(name, proc.info["ppid"] or 0, proc.info["create_time"], seconds, compilers)
    return found


def compiler_threads(pid: int) -> tuple[tuple[int, float], ...]:
    """The JIT compiler threads of JVM ``pid`` and the CPU seconds of each (none where /proc cannot tell)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: list[tuple[int, float]] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ()
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                text = stat.read()
        except OSError:  # the thread ended while we looked
            continue
        name, _, rest = text.partition("(")[2].rpartition(")")
        if name.startswith(_COMPILER_THREADS):
            fields = rest.split()
            found.append((int(tid), (int(fields[11]) + int(fields[12])) / ticks))  # utime, stime
    return tuple(found)


def spent(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU seconds of each component between two snapshots (see the module doc for exited processes)."""

    def same(pid: int) -> bool:
        return pid in before and pid in after and before[pid].started == after[pid].started

    totals = dict.fromkeys(_ALL, 0.0)
    for pid, proc in after.items():
        prior = before[pid] if same(pid) else None
        jit = proc.jit_since(prior)
        totals[proc.component] += proc.seconds - (prior.seconds if prior is not None else 0.0) - jit
        totals["jvm_jit"] += jit
    for pid, proc in before.items():
        if not same(pid) and same(proc.parent):
            # its parent reaped it: the parent's children time grew by this process's whole life
            totals[after[proc.parent].component] -= proc.seconds
    return totals


def per_event(
    before: Snapshot, after: Snapshot, events: int, names: Sequence[str] = COMPONENTS
) -> dict[str, float]:
    """µs of CPU per event of each of ``names`` between two snapshots."""
    if events <= 0:
        raise ValueError(f"per_event needs a positive number of events, got {events}")
    totals = spent(before, after)
    return {k: round(totals[k] / events * 1e6, 1) for k in names}


def line(label: str, cpu: dict[str, float], names: Iterable[str] = COMPONENTS) -> str:
    """``label`` and the µs per event of each of ``names``, on one line."""
    parts = ", ".join(f"{n} {cpu[n]:g}" for n in names)
    return f"{label} CPU µs/event: {parts} (total {sum(cpu[n] for n in names):.1f})"
