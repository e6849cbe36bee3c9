"""CPU accounting of the benchmarks and the demo: which process is which part, and µs per event."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from lab.demo import process_cpu


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
        (["/usr/sbin/inspircd", "--nofork"], "irc_server"),
        (["/venv/bin/python3.11", "-m", "chatlog", "ingest", "--replica", "0"], "ingesters"),
        (["/venv/bin/python3.11", "-m", "chatlog", "simulate", "--rate", "10"], "simulator"),
        (["/venv/bin/python3.11", "/venv/bin/chatlog", "sink"], "sink_driver"),
        (["/venv/bin/python3.11", "/venv/bin/chatlog", "serve"], "serve"),  # the demo measures serve too
        (["/venv/bin/python3.11", "/venv/bin/chatlog", "logs", "chan"], None),
        ([], None),
    ],
)
def test_component_of_a_command_line(cmdline: list[str], expected: str | None) -> None:
    assert process_cpu.component(cmdline) == expected


def _snapshot(**seconds: tuple[str, int, float]) -> process_cpu.Snapshot:
    """pid_N=(component, parent pid, seconds) -> a snapshot (every process started at time 1.0)."""
    return {
        int(key.removeprefix("pid_")): process_cpu.Proc(name, parent, 1.0, secs)
        for key, (name, parent, secs) in seconds.items()
    }


def test_per_event_is_the_difference_in_microseconds_per_event() -> None:
    before = _snapshot(pid_10=("cassandra", 1, 1.0), pid_11=("spark_jvm", 1, 1.0), pid_12=("kafka", 1, 1.0))
    after = _snapshot(pid_10=("cassandra", 1, 1.5), pid_11=("spark_jvm", 1, 1.2), pid_12=("kafka", 1, 1.0))
    cpu = process_cpu.per_event(before, after, 10_000)
    assert cpu["cassandra"] == 50.0
    assert cpu["spark_jvm"] == 20.0
    assert cpu["kafka"] == 0.0
    assert "cassandra 50" in process_cpu.line("x", cpu)


def test_a_process_started_during_the_run_counts_whole() -> None:
    before = _snapshot(pid_20=("python_workers", 1, 3.0))
    after = _snapshot(pid_20=("python_workers", 1, 3.0), pid_21=("python_workers", 20, 0.4))
    assert process_cpu.spent(before, after)["python_workers"] == pytest.approx(0.4)


def test_a_worker_reaped_by_a_counted_parent_counts_its_time_in_the_run() -> None:
    # pyspark's daemon (20) reaped worker 21: its children time grew by the worker's whole 5 s life
    before = _snapshot(pid_20=("python_workers", 1, 1.0), pid_21=("python_workers", 20, 4.0))
    after = _snapshot(pid_20=("python_workers", 1, 1.0 + 5.0))
    assert process_cpu.spent(before, after)["python_workers"] == pytest.approx(1.0)


def test_a_process_nobody_counted_reaped_is_missed_not_taken_off() -> None:
    # a pool worker whose parent is not a counted process: its 26 s before the run are not subtracted
    before = _snapshot(pid_30=("python_workers", 1, 26.0), pid_31=("python_workers", 1, 2.0))
    after = _snapshot(pid_31=("python_workers", 1, 2.5))
    assert process_cpu.spent(before, after)["python_workers"] == pytest.approx(0.5)


def test_a_pid_taken_again_is_a_new_process() -> None:
    before = _snapshot(pid_40=("python_workers", 1, 9.0))
    after = {40: process_cpu.Proc("python_workers", 1, 2.0, 0.3)}
    assert process_cpu.spent(before, after)["python_workers"] == pytest.approx(0.3)


def test_per_event_refuses_no_events() -> None:
    with pytest.raises(ValueError, match="positive number of events"):
        process_cpu.per_event({}, {}, 0)


def test_snapshot_counts_this_process_as_the_bench() -> None:
    before = process_cpu.snapshot()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    after = process_cpu.snapshot()
    assert after[os.getpid()].component == "bench"
    # the kernel counts CPU time in clock ticks (10 ms): 0.2 s of it reads as 0.19-0.21 s
    assert process_cpu.spent(before, after)["bench"] >= 0.15


def test_a_snapshot_counts_this_runs_processes_not_a_look_alike_elsewhere() -> None:
    import subprocess
    import sys

    pytest.importorskip("psutil")
    sleeper = "import sys, time; time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", sleeper, "pyspark.daemon"])
    # a look-alike that is not ours: started by a shell that exits at once (it is re-parented to init)
    spawner = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "{sleeper}" pyspark.daemon >/dev/null 2>&1 & echo $!'],
        capture_output=True,
        text=True,
        check=True,
    )
    stranger = int(spawner.stdout.strip())
    try:
        found = process_cpu.snapshot()
        assert found[child.pid].component == "python_workers"
        assert stranger not in found
        assert found[os.getpid()].component == "bench"
    finally:
        child.kill()
        child.wait()
        os.kill(stranger, 9)


def test_the_demo_reports_each_part_of_the_pipeline_and_only_those() -> None:
    before = {1: process_cpu.Proc("ingesters", 0, 1.0, 1.0), 2: process_cpu.Proc("simulator", 0, 1.0, 0.0)}
    after = {
        1: process_cpu.Proc("ingesters", 0, 1.0, 1.5),
        2: process_cpu.Proc("simulator", 0, 1.0, 0.25),
        3: process_cpu.Proc("bench", 0, 1.0, 9.0),
    }
    cpu = process_cpu.per_event(before, after, 1000, process_cpu.PIPELINE)
    assert list(cpu) == list(process_cpu.PIPELINE)
    assert (cpu["ingesters"], cpu["simulator"], cpu["cassandra"]) == (500.0, 250.0, 0.0)
    assert "bench" not in cpu


def test_a_jvms_jit_compilers_are_counted_apart_from_its_part() -> None:
    before = {1: process_cpu.Proc("kafka", 0, 1.0, 10.0, ((11, 3.0), (12, 1.0)))}
    after = {
        # thread 11 compiled 2.5 s more; 12 ended (its last second was counted before); 13 is new
        1: process_cpu.Proc("kafka", 0, 1.0, 14.0, ((11, 5.5), (13, 0.25))),
        2: process_cpu.Proc("cassandra", 0, 5.0, 2.0, ((21, 0.5),)),  # started between the snapshots
    }
    totals = process_cpu.spent(before, after)
    assert (totals["kafka"], totals["cassandra"], totals["jvm_jit"]) == (1.25, 1.5, 3.25)
    assert "jvm_jit" in process_cpu.PIPELINE_PARTS


def test_the_compiler_threads_of_a_running_jvm_are_found(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on this machine")
    source = tmp_path / "Hot.java"  # a loop hot enough to be compiled, then a wait
    source.write_text(
        "class Hot { public static void main(String[] a) throws Exception { long s = 0;"
        " for (long i = 0; i < 300000000L; i++) s += i % 7; System.out.println(s); Thread.sleep(30000); } }"
    )
    jvm = subprocess.Popen([java, str(source)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not process_cpu.compiler_threads(jvm.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        while sum(s for _, s in process_cpu.compiler_threads(jvm.pid)) == 0.0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(s for _, s in process_cpu.compiler_threads(jvm.pid)) > 0.0
        assert process_cpu.compiler_threads(os.getpid()) == ()  # a Python process has none
    finally:
        jvm.kill()
        jvm.wait()
