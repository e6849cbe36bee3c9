"""``chatlog init``: retries while services are unreachable, runs the halves asked for, one-line errors."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chatlog.cli import init as init_cli
from core.errors import ChatlogError
from core.testing import FakeClock


def test_retry_until_returns_after_transient_failures() -> None:
    clock = FakeClock()
    attempts: list[float] = []
    messages: list[str] = []

    def step() -> str:
        attempts.append(clock.now)
        if len(attempts) < 3:
            raise ChatlogError("cannot reach Kafka")
        return "done"

    result = init_cli.retry_until(
        step, wait_s=30, interval_s=5, report=messages.append, clock=clock, sleep=clock.sleep
    )
    assert result == "done"
    assert attempts == [0.0, 5.0, 10.0]
    assert len(messages) == 2 and "cannot reach Kafka" in messages[0]


def test_retry_until_gives_up_at_the_deadline_with_the_last_error() -> None:
    clock = FakeClock()

    def step() -> None:
        raise ChatlogError(f"down at {clock.now:.0f}")

    with pytest.raises(ChatlogError, match="down at 9"):
        init_cli.retry_until(
            step, wait_s=10, interval_s=3, report=lambda _m: None, clock=clock, sleep=clock.sleep
        )
    assert clock.sleeps == [3, 3, 3]


def test_retry_until_without_wait_fails_at_once_and_lets_other_errors_through() -> None:
    clock = FakeClock()

    def unreachable() -> None:
        raise ChatlogError("down")

    with pytest.raises(ChatlogError):
        init_cli.retry_until(unreachable, wait_s=0, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == []

    def broken() -> None:
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError):
        init_cli.retry_until(broken, wait_s=60, clock=clock, sleep=clock.sleep)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Record what init would do to Kafka and Cassandra (the integration test does it for real)."""
    from core import kafka_admin
    from store import schema

    seen: list[tuple[str, Any]] = []

    def ensure_topics(settings: Any) -> list[str]:
        seen.append(("topics", settings))
        return ["chatlog.channels"]

    def apply_schema(settings: Any, keyspace: str | None = None, tell: Any = None, **kwargs: Any) -> int:
        seen.append(("cql", settings))
        return 4

    monkeypatch.setattr(kafka_admin, "ensure_topics", ensure_topics)
    monkeypatch.setattr(schema, "apply_schema", apply_schema)
    return seen


def _app() -> typer.Typer:
    app = typer.Typer()
    init_cli.register(app)

    @app.command()
    def other() -> None:  # a second command, so typer keeps `init` as a named sub-command
        """Unused."""

    return app


def test_init_command_runs_both_halves_with_settings_from_the_environment(
    calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATLOG_TOPIC_MESSAGES", "x.messages")
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", "xks")
    result = CliRunner().invoke(_app(), ["init"])
    assert result.exit_code == 0, result.output
    assert [kind for kind, _ in calls] == ["topics", "cql"]
    assert calls[0][1].topic_messages == "x.messages"
    assert calls[1][1].cassandra_keyspace == "xks"
    assert "created chatlog.channels" in result.output
    assert "4 statements applied to keyspace xks" in result.output


def test_init_command_can_skip_the_topics(calls: list[tuple[str, Any]]) -> None:
    result = CliRunner().invoke(_app(), ["init", "--no-topics"])
    assert result.exit_code == 0, result.output
    assert [kind for kind, _ in calls] == ["cql"]


def test_init_with_nothing_to_do_is_a_one_line_error(calls: list[tuple[str, Any]]) -> None:
    with pytest.raises(ChatlogError, match="nothing to do"):
        init_cli.run_init(topics=False, cql=False, wait_s=0)
    assert calls == []


def test_init_rejects_a_bad_setting_before_touching_anything(
    calls: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATLOG_CHANNEL_BUCKETS", "zero")
    with pytest.raises(ChatlogError, match="CHATLOG_CHANNEL_BUCKETS"):
        init_cli.run_init(topics=True, cql=True, wait_s=0)
    assert calls == []
