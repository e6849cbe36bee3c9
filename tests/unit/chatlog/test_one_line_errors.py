"""Every failing command: one line saying what is wrong and which setting, exit code 2, within 15 s,
never a traceback or pages of client-library logs (issue 13, item 3). Services are "down": Kafka,
Cassandra and IRC are pointed at ports nothing listens on."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.unit.cli_runs import DOWN, Run, chatlog, free_port

KAFKA = "CHATLOG_KAFKA_BOOTSTRAP_SERVERS"
CASSANDRA = "CHATLOG_CASSANDRA_PORT"
CASES: list[tuple[list[str], dict[str, str], str]] = [
    (["status"], {"CHATLOG_KAFKA_SECURITY_PROTOCOL": "bogus"}, "CHATLOG_KAFKA_SECURITY_PROTOCOL"),
    (["status"], {"CHATLOG_KAFKA_SASL_MECHANISM": "bogus"}, "CHATLOG_KAFKA_SASL_MECHANISM"),
    (["logs", "x", "--since", "²"], {}, "--since"),
    (["logs", "x", "--until", "99999999999999999999999"], {}, "--until"),
    (["logs", "x", "--since", "-1"], {}, "--since"),
    (["logs", "x", "--until", "0001-01-01T00:00:00+14:00"], {}, "--until"),
    (["logs", "x"], {}, CASSANDRA),
    (["init"], {}, KAFKA),
    (["init", "--no-topics"], {}, CASSANDRA),
    (
        ["init", "--no-topics"],
        {"CHATLOG_CASSANDRA_REPLICATION": "{'class': 'SimpleStrategy'}; DROP KEYSPACE x"},
        "CHATLOG_CASSANDRA_REPLICATION",
    ),
    (["monitor"], {}, KAFKA),
    (["status"], {}, KAFKA),
    (["channels", "list"], {}, KAFKA),
    (["channels", "add", "forsen"], {}, KAFKA),
    (["ingest", "--replica", "0"], {}, KAFKA),
    (
        ["status"],
        {"CHATLOG_STRICT_SETTINGS": "true", "CHATLOG_KAFKA_BOOTSTRAP_SERVER": "x:1"},
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS",
    ),
]


@pytest.fixture(scope="module")
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture(scope="module")
def runs(taken_port: int) -> list[tuple[Run, str]]:
    cases = [
        *CASES,
        (["monitor"], {"CHATLOG_MONITOR_WEB_PORT": str(taken_port)}, "CHATLOG_MONITOR_WEB_PORT"),
        (["monitor"], {"CHATLOG_MONITOR_METRICS_PORT": str(taken_port)}, "CHATLOG_MONITOR_METRICS_PORT"),
    ]

    def one(case: tuple[list[str], dict[str, str], str]) -> tuple[Run, str]:
        args, env, setting = case
        monitor = {
            "CHATLOG_MONITOR_WEB_PORT": str(free_port()),
            "CHATLOG_MONITOR_METRICS_PORT": str(free_port()),
        }
        return chatlog(args, {**DOWN, **monitor, **env}), setting

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(one, cases))


def test_each_failure_is_one_line_naming_the_setting_with_exit_code_2_within_15_s(
    runs: list[tuple[Run, str]],
) -> None:
    bad = [
        (" ".join(run.args), run.code, round(run.seconds, 1), run.stderr_lines[:3])
        for run, setting in runs
        if run.code != 2
        or len(run.stderr_lines) != 1
        or setting not in run.stderr_lines[0]
        or not run.stderr_lines[0].startswith("chatlog: error: ")
        or run.seconds >= 15
    ]
    assert not bad, bad
