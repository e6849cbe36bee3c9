"""CPU time of each part of the local pipeline during a benchmark run, per event.

On one machine the sink, Cassandra and Kafka share the cores, so a rate alone does not say where the
time goes. :func:`snapshot` reads the CPU time (user + system) of every process of the local stack and
of this benchmark, grouped by what it is; :func:`per_event` turns two snapshots into µs per event.

A process that exited between two snapshots is counted only through its parent's reaped-children
time (pyspark's daemon reaps its workers); one whose parent did not reap it is missed, so the figures
are lower bounds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from chatlog import extras

COMPONENTS = ("spark_jvm", "python_workers", "cassandra", "kafka", "bench")
"""What a snapshot reports, in this order."""

_MARKERS: tuple[tuple[str, str], ...] = (
    ("org.apache.cassandra.service.CassandraDaemon", "cassandra"),
    ("kafka.Kafka", "kafka"),
    ("org.apache.spark.deploy.SparkSubmit", "spark_jvm"),
    ("pyspark.daemon", "python_workers"),
    ("pyspark.worker", "python_workers"),
    ("multiprocessing.spawn", "python_workers"),  # the raw insert's pool
)
"""A command-line fragment -> the component of the process (the first match wins)."""


def component(cmdline: Sequence[str]) -> str | None:
    """The component a process with ``cmdline`` belongs to (None: not part of the pipeline)."""
    text = " ".join(cmdline)
    for marker, name in _MARKERS:
        if marker in text:
            return name
    return None


def snapshot() -> dict[str, float]:
    """CPU seconds so far per component (this process counts as ``bench``)."""
    extras.require_cpu_accounting()
    import psutil

    totals = dict.fromkeys(COMPONENTS, 0.0)
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        name = "bench" if proc.info["pid"] == me else component(proc.info["cmdline"] or ())
        if name is None:
            continue
        try:
            t = proc.cpu_times()
        except psutil.Error:  # exited while we looked
            continue
        totals[name] += t.user + t.system + t.children_user + t.children_system
    return totals


def per_event(before: dict[str, float], after: dict[str, float], events: int) -> dict[str, float]:
    """µs of CPU per event of each component between two snapshots."""
    if events <= 0:
        raise ValueError(f"per_event needs a positive number of events, got {events}")
    return {k: round((after[k] - before[k]) / events * 1e6, 1) for k in COMPONENTS}


def line(label: str, cpu: dict[str, float], names: Iterable[str] = COMPONENTS) -> str:
    """``label`` and the µs per event of each of ``names``, on one line."""
    parts = ", ".join(f"{n} {cpu[n]:g}" for n in names)
    return f"{label} CPU µs/event: {parts} (total {sum(cpu[n] for n in names):.1f})"
