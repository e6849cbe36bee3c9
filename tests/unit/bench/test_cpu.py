"""CPU accounting of the benchmarks: which process is which part, and µs per event."""

from __future__ import annotations

import time

import pytest

from bench import cpu as bench_cpu


@pytest.mark.parametrize(
    ("cmdline", "expected"),
    [
        (["/usr/bin/java", "-Xmx1g", "org.apache.cassandra.service.CassandraDaemon"], "cassandra"),
        (["/usr/bin/java", "-cp", "x.jar", "kafka.Kafka", "server.properties"], "kafka"),
        (["java", "-cp", "jars/*", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"], "spark_jvm"),
        (["/venv/bin/python3.11", "-m", "pyspark.daemon", "pyspark.worker"], "python_workers"),
        (
            ["python3.11", "-B", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"],
            "python_workers",
        ),
        (["python3.11", "-c", "from multiprocessing.resource_tracker import main;main(19)"], None),
        (["/usr/sbin/inspircd", "--nofork"], None),
        ([], None),
    ],
)
def test_component_of_a_command_line(cmdline: list[str], expected: str | None) -> None:
    assert bench_cpu.component(cmdline) == expected


def test_per_event_is_the_difference_in_microseconds_per_event() -> None:
    before = dict.fromkeys(bench_cpu.COMPONENTS, 1.0)
    after = {**before, "cassandra": 1.5, "spark_jvm": 1.2}
    cpu = bench_cpu.per_event(before, after, 10_000)
    assert cpu["cassandra"] == 50.0
    assert cpu["spark_jvm"] == 20.0
    assert cpu["kafka"] == 0.0
    assert "cassandra 50" in bench_cpu.line("x", cpu)


def test_per_event_refuses_no_events() -> None:
    zero = dict.fromkeys(bench_cpu.COMPONENTS, 0.0)
    with pytest.raises(ValueError, match="positive number of events"):
        bench_cpu.per_event(zero, zero, 0)


def test_snapshot_counts_this_process_as_the_bench() -> None:
    before = bench_cpu.snapshot()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    after = bench_cpu.snapshot()
    assert set(after) == set(bench_cpu.COMPONENTS)
    # the kernel counts CPU time in clock ticks (10 ms): 0.2 s of it reads as 0.19-0.21 s
    assert after["bench"] - before["bench"] >= 0.15
