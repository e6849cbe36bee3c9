"""``chatlog bench fill``: ``chatlog fill --all`` of a channel never logged here from a real justlog, side
by side with ``chatlog import`` of the same lines from justlog's files, in one run (issue 51).

1. the data set (:mod:`lab.bench.justlog_tree`, ``chatlog bench vs-justlog``'s): one channel, ``days`` x
   ``lines_per_day`` Twitch PRIVMSG lines, written as a justlog log tree;
2. ``chatlog import --justlog`` of the tree's channel files into scratch topics: seconds and CPU seconds of
   the command's process;
3. justlog on the tree (:mod:`lab.bench.justlog_server`), its archiver left to gzip it (as a peer serves its
   past), then ``chatlog fill CHANNEL --from <justlog> --all`` into other scratch topics and a scratch
   keyspace (its ledger): seconds and CPU seconds of the command's process and of justlog meanwhile;
4. both counts of lines checked against the tree; the rates (lines per second) and their ratio.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from core.errors import ChatlogError
from lab.bench.justlog_tree import CHANNEL, TreeParams, write_tree
from lab.bench.serve import chatlog_command, free_port, say
from lab.bench.serve_load import cpu_seconds


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """``chatlog ARGS``: its exit, seconds, CPU seconds (the process and its children) and last words."""
    cpu0, start = _children_cpu_s(), time.perf_counter()
    proc = subprocess.run(
        [chatlog_command(), *args], env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    seconds, cpu = time.perf_counter() - start, _children_cpu_s() - cpu0
    said = " ".join((proc.stderr + proc.stdout).split())
    if proc.returncode != 0:
        raise ChatlogError(f"chatlog {args[0]} exited with {proc.returncode}: {said[-600:]}")
    return {"seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "said": said[-400:]}


def run(settings: Any, binary: Path, params: TreeParams, out: Path) -> dict[str, Any]:
    """The comparison (``settings``: sink settings, where Kafka and Cassandra are); the result at ``out``."""
    from lab.bench.justlog_server import running_justlog, wait_archived
    from lab.bench.scratch import scratch_keyspaces, scratch_topics
    from lab.results import write_json
    from store.schema import apply_schema

    root = Path(tempfile.mkdtemp(prefix="chatlog-bench-fill-"))
    try:
        say(f"writing the justlog tree ({params.days} days x {params.lines_per_day:,} lines) under {root}")
        tree = write_tree(root / "logs", params)
        base_env = {**os.environ, "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers}
        with (
            scratch_topics(settings, "benchimport") as imported_to,
            scratch_topics(settings, "benchfill") as filled_to,
            scratch_keyspaces(settings, "bench_fill") as (keyspace,),
        ):
            apply_schema(settings.model_copy(update={"cassandra_keyspace": keyspace}))
            env = {**base_env, **imported_to.topic_env()}
            imported = timed(["import", "--justlog", "--no-progress", str(tree.root)], env, 3600)
            say(f"import: {imported['seconds']} s, {imported['cpu_s']} CPU s: {imported['said'][-160:]}")
            with running_justlog(
                binary,
                tree.root,
                root / "justlog",
                channel_id=tree.channel_id,
                channel=CHANNEL,
                port=free_port(),
            ) as (justlog, _standin):
                wait_archived(tree.files(), justlog.pid, timeout_s=120 + tree.lines / 1000)
                env = {**base_env, **filled_to.topic_env(), "CHATLOG_CASSANDRA_KEYSPACE": keyspace}
                peer0 = cpu_seconds(justlog.pid) or 0.0
                filled = timed(["fill", CHANNEL, "--from", justlog.base, "--all", "--no-progress"], env, 3600)
                filled["peer_cpu_s"] = round((cpu_seconds(justlog.pid) or 0.0) - peer0, 2)
            say(f"fill: {filled['seconds']} s, {filled['cpu_s']} CPU s: {filled['said'][-200:]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = tree.lines
    for side in (imported, filled):
        side["lines_per_s"] = round(lines / side["seconds"], 1)
        side["cpu_us_per_line"] = round(1e6 * side["cpu_s"] / lines, 1)
    if f"lines imported {lines}," not in filled["said"]:
        raise ChatlogError(f"the fill did not import the tree's {lines} lines: {filled['said'][-300:]}")
    result = {
        "params": {"days": params.days, "lines_per_day": params.lines_per_day, "users": params.users},
        "lines": lines,
        "cpus": os.cpu_count(),
        "import": imported,
        "fill": filled,
        "fill_rate_vs_import": round(filled["lines_per_s"] / imported["lines_per_s"], 2),
        "note": "chatlog import --justlog of the tree's files vs chatlog fill --all from justlog serving the "
        "same tree (gzipped by its archiver), into Kafka, in one run; seconds and CPU seconds of each "
        "command's process (peer_cpu_s: justlog's CPU during the fill)",
    }
    write_json(out, result)
    return result


def summary(result: dict[str, Any]) -> str:
    i, f = result["import"], result["fill"]
    return (
        f"{result['lines']:,} lines: import {i['lines_per_s']:,.0f} lines/s "
        f"({i['cpu_us_per_line']} µs CPU per line), fill from justlog {f['lines_per_s']:,.0f} lines/s "
        f"({f['cpu_us_per_line']} µs; justlog {f['peer_cpu_s']} CPU s); "
        f"fill/import rate {result['fill_rate_vs_import']}x"
    )
