"""chatlog/cli/main.py: every failing command is one line saying what is wrong and which setting, exit code
2, within 15 s, never a traceback or pages of client-library logs (issue 13, item 3); services are "down":
Kafka, Cassandra and IRC are pointed at ports nothing listens on. An unknown CHATLOG_* variable is a
one-line warning; every variable of every settings class is known to the command line."""

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
    (["import", "README.md"], {}, KAFKA),
    (["sink"], {}, KAFKA),
    (["sink", "--backfill", "--from", "2026-01-01T00:00:00Z"], {}, KAFKA),
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


def test_the_command_line_warns_in_one_line_and_strict_exits_2() -> None:
    typo = {"CHATLOG_KAFKA_BOOTSTRAP_SERVER": "127.0.0.1:1"}
    warned = chatlog(["logs", "x", "--since", "²"], typo)
    assert warned.code == 2 and warned.stderr_lines == [
        "chatlog: warning: unknown setting CHATLOG_KAFKA_BOOTSTRAP_SERVER "
        "(did you mean CHATLOG_KAFKA_BOOTSTRAP_SERVERS?): it is ignored",
        warned.stderr_lines[1],
    ]
    assert warned.stderr_lines[1].startswith("chatlog: error: --since")
    strict = chatlog(["--help"], {**typo, "CHATLOG_STRICT_SETTINGS": "true"})
    assert strict.code == 2 and len(strict.stderr_lines) == 1
    assert "CHATLOG_KAFKA_BOOTSTRAP_SERVERS?" in strict.stderr_lines[0]


def test_every_variable_of_every_settings_class_is_known_to_the_command_line() -> None:
    """The catalog (chatlog/cli/schema.py) reaches the check: no service's variable is taken for a typo."""
    from chatlog.cli.schema import settings_classes
    from core.settings_env import known_variables

    names = sorted(known_variables(settings_classes()) - {"CHATLOG_STRICT_SETTINGS", "CHATLOG_HOME"})
    assert {"CHATLOG_INGEST_REPLICA", "CHATLOG_SINK_DEDUP_WINDOW", "CHATLOG_MONITOR_WEB_PORT"} <= set(names)
    run = chatlog(["schema", "--help"], dict.fromkeys(names, "1"))
    assert run.code == 0 and run.stderr_lines == []
