"""No output of chatlog ever contains a secret's value, whatever fails (issue 13, item 1).

Every secret setting (every ``SecretStr`` field of every settings class) gets a fake value; then every
failing path reachable without a stack runs as a subprocess, and the values are looked for in all of
stdout and stderr. The log filter, the settings' reprs and the settings error are checked in process.
"""

from __future__ import annotations

import io
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chatlog.cli.schema import settings_classes
from core import redact
from core.settings import KafkaSettings, load
from core.settings_env import secret_variables
from core.settings_errors import describe
from ingest.settings import IngestSettings
from tests.unit.cli_runs import DOWN, Run, chatlog, free_port

SECRETS = {
    name: f"FAKE-{name[8:].lower()}-s3cr3t-4417" for name in sorted(secret_variables(settings_classes()))
}


def test_the_fake_secrets_cover_every_secret_setting() -> None:
    assert {"CHATLOG_IRC_OAUTH", "CHATLOG_KAFKA_SASL_PASSWORD", "CHATLOG_CASSANDRA_PASSWORD"} <= set(SECRETS)


def _env(**extra: str) -> dict[str, str]:
    return {
        **DOWN,
        **SECRETS,
        "CHATLOG_IRC_NICK": "bot",
        "CHATLOG_KAFKA_SASL_USERNAME": "chatlog",
        "CHATLOG_CASSANDRA_USERNAME": "chatlog",
        "CHATLOG_MONITOR_WEB_PORT": str(free_port()),
        "CHATLOG_MONITOR_METRICS_PORT": str(free_port()),
        **extra,
    }


SASL = {"CHATLOG_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "CHATLOG_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512"}
CASES: list[tuple[list[str], dict[str, str]]] = [
    # settings that fail validation: a model-level validator (its input is every variable), a field
    (["ingest", "--replica", "0"], {"CHATLOG_IRC_RECONNECT_BACKOFF_MAX_S": "0.5"}),
    (["ingest", "--replica", "0"], {"CHATLOG_IRC_PORT": "not-a-port"}),
    (["status"], {"CHATLOG_KAFKA_SECURITY_PROTOCOL": "bogus"}),
    (["status"], {"CHATLOG_KAFKA_SASL_MECHANISM": "bogus"}),
    (["logs", "x"], {"CHATLOG_CASSANDRA_PORT": "x"}),
    (["init", "--no-topics"], {"CHATLOG_CASSANDRA_REPLICATION": "{'class': 'SimpleStrategy'}; DROP x"}),
    (["channels", "list"], {"CHATLOG_CHANNEL_BUCKETS": "0"}),
    # unknown variables, one of them a misspelt secret
    (["channels", "list"], {"CHATLOG_KAFKA_SASL_PASSWROD": SECRETS["CHATLOG_KAFKA_SASL_PASSWORD"]}),
    (["status"], {"CHATLOG_STRICT_SETTINGS": "true", "CHATLOG_IRC_OUATH": SECRETS["CHATLOG_IRC_OAUTH"]}),
    # bad flags and arguments
    (["ingest", "--replica", "x"], {}),
    (["ingest", "--worker-id", "no spaces allowed"], {}),
    (["logs"], {}),
    (["logs", "x", "--since", "²"], {}),
    (["logs", "x", "--until", "99999999999999999999999"], {}),
    (["logs", "x", "--format", "xml"], {}),
    (["sink", "--from", "2026-01-01"], {}),
    (["nosuchcommand"], {}),
    # services down (Kafka, Cassandra and IRC on ports nothing listens on), with and without SASL
    (["ingest", "--replica", "0"], {}),
    (["ingest", "--replica", "0"], SASL),
    (["status"], {}),
    (["status", "--json"], SASL),
    (["channels", "list"], SASL),
    (["channels", "add", "forsen"], {}),
    (["channels", "remove", "forsen"], SASL),
    (["init"], SASL),
    (["init", "--no-topics"], {}),
    (["monitor"], {}),
    (["monitor"], SASL),
    (["logs", "x"], {}),
    (["smoke"], {}),
    (["smoke"], SASL),
    (["simulate", "x", "--duration", "1"], {}),
    (["import", "/nonexistent/file.txt"], {}),
    (["import", "/nonexistent/file.txt", "--dry-run"], {}),
    # help and read-only output
    (["--help"], {}),
    (["ingest", "--help"], {}),
    (["logs", "--help"], {}),
    (["sink", "--help"], {}),
    (["monitor", "--help"], {}),
    (["stack", "status"], {}),
]


@pytest.fixture(scope="module")
def runs() -> list[Run]:
    with ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda case: chatlog(case[0], _env(**case[1])), CASES))


def test_no_failing_command_prints_a_secret(runs: list[Run]) -> None:
    leaks = [
        f"{' '.join(run.args)}: {name}"
        for run in runs
        for name, value in SECRETS.items()
        if value in run.output or value.removeprefix("FAKE-") in run.output
    ]
    assert not leaks, leaks


def test_the_paths_really_failed_or_answered(runs: list[Run]) -> None:
    """The runs did what the cases mean (so the test is not vacuous): errors, and help texts."""
    helps = [run for run in runs if "--help" in run.args]
    status = [run for run in runs if run.args == ("stack", "status")]
    failed = [run for run in runs if run not in helps and run not in status]
    assert all(run.code == 0 and run.stdout for run in helps), [(r.args, r.code) for r in helps]
    assert all(run.stdout for run in status)  # a table of the services (exit 1 when one is down)
    assert all(run.code != 0 and run.stderr for run in failed), [(r.args, r.code) for r in failed]


def test_the_model_level_error_names_the_problem_and_not_the_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CHATLOG_IRC_RECONNECT_BACKOFF_MAX_S", "0.5")
    with pytest.raises(Exception) as info:
        load(IngestSettings, ingest_replica=0)
    message = str(info.value)
    assert "irc_reconnect_backoff_max_s must be >= irc_reconnect_backoff_min_s" in message
    assert not any(v in message for v in SECRETS.values())
    assert "got" not in message  # a model-level input is never echoed


def test_reprs_and_dumps_of_every_settings_class_hide_the_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    for cls in settings_classes():
        settings = cls()
        shown = [repr(settings), str(settings), settings.model_dump_json(), str(settings.model_dump())]
        assert not any(v in text for text in shown for v in SECRETS.values()), cls.__name__


def test_a_librdkafka_config_in_a_log_line_or_traceback_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CHATLOG_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("CHATLOG_KAFKA_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("CHATLOG_KAFKA_SASL_USERNAME", "chatlog")
    conf = KafkaSettings().kafka_client_config()
    assert conf["sasl.password"] == SECRETS["CHATLOG_KAFKA_SASL_PASSWORD"]  # librdkafka needs the value
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(redact.SecretFilter())
    logger = logging.getLogger("test.secrets")
    logger.addHandler(handler)
    try:
        logger.error("client config %s", conf)
        try:
            raise RuntimeError(f"failed with {conf!r}")
        except RuntimeError:
            logger.exception("and a traceback")
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    assert "sasl.password" in out and "failed with" in out and redact.MASK in out
    assert SECRETS["CHATLOG_KAFKA_SASL_PASSWORD"] not in out


def test_describe_never_shows_a_secret_fields_own_input() -> None:
    from pydantic import SecretStr, ValidationError
    from pydantic_settings import BaseSettings

    class Secretive(BaseSettings):
        token: SecretStr | None = None

    with pytest.raises(ValidationError) as info:
        Secretive(token=["FAKE-list-secret"])  # type: ignore[arg-type]
    line = describe(Secretive, info.value)
    assert line.startswith("setting token (TOKEN)") and "FAKE-list-secret" not in line


def test_an_offending_value_is_shown_once_and_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_IRC_PORT", "9" * 500)
    with pytest.raises(Exception) as info:
        load(IngestSettings)
    line = str(info.value)
    assert line.startswith("setting irc_port (CHATLOG_IRC_PORT)") and len(line) < 300
    assert "\n" not in line


def test_the_secret_names_are_found_in_every_settings_module() -> None:
    root = Path(__file__).resolve().parents[2]
    declared = {
        path.relative_to(root).as_posix()
        for package in ("core", "ingest", "sink", "serve", "chatlog")
        for path in (root / package).rglob("settings.py")
        if "SecretStr" in path.read_text()
    }
    assert "core/settings.py" in declared  # where the secrets live today; a new one is found too


def test_an_irc_token_is_masked_with_and_without_its_oauth_prefix() -> None:
    secrets = redact.secret_values({"CHATLOG_IRC_OAUTH": "oauth:abcdef0123456789"})
    line = redact.redact("PASS abcdef0123456789 refused; token oauth:abcdef0123456789", secrets)
    assert "abcdef0123456789" not in line and line.count(redact.MASK) == 2


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Kafka at alice:hunter2@broker:9092 is not reachable", "@broker:9092 is not reachable"),
        ("checkpoint s3a://AKIAKEY:se/cret+x@bucket/cp failed", "s3a://"),
        ("{'bootstrap.servers': 'u:pw@10.0.0.1:9092'}", "@10.0.0.1:9092"),
    ],
)
def test_credentials_in_a_url_or_host_are_masked_without_any_secret_setting(text: str, kept: str) -> None:
    line = redact.redact(text, [])
    assert redact.MASK in line and kept in line
    assert not any(word in line for word in ("hunter2", "se/cret", "AKIAKEY", "u:pw"))


@pytest.mark.parametrize(
    "text",
    [
        "@badge-info=;emotes=25:0-4 :bob!bob@bob.tmi.twitch.tv PRIVMSG #a :mail me at x@y.z",
        "GET http://127.0.0.1:8025/channel/forsen/user/a@b",
        "user@example.com",
    ],
)
def test_irc_prefixes_addresses_and_ports_are_not_taken_for_credentials(text: str) -> None:
    assert redact.redact(text, []) == text


@pytest.mark.parametrize("password", ["S3cret/PW!", "S3cret PW!", "S3cret@PW!", "pa:ss/w@rd"])
def test_a_password_in_a_host_setting_is_masked_whole_whatever_it_holds(password: str) -> None:
    env = {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": f"u:{password}@127.0.0.1:1,other:9092",
        "CHATLOG_SINK_CHECKPOINT": f"s3a://key:{password}@bucket/cp",
        "HOME": f"x:{password}@y",  # not a chatlog setting: not looked into
    }
    secrets = redact.secret_values(env)
    assert password in secrets
    line = redact.redact(
        f"Kafka at u:{password}@127.0.0.1:1 is not reachable; s3a://key:{password}@bucket", secrets
    )
    assert "S3cret" not in line and "pa:ss" not in line and "@127.0.0.1:1 is not reachable" in line, line


def test_a_service_that_is_down_is_one_line_for_smoke_and_simulate(runs: list[Run]) -> None:
    down = [run for run in runs if run.args[0] in ("smoke", "simulate")]
    assert len(down) == 3
    assert all(run.code == 2 and len(run.stderr_lines) == 1 for run in down), [
        (r.args, r.stderr) for r in down
    ]
    assert all("not reachable" in run.stderr or "IRC server at" in run.stderr for run in down)
