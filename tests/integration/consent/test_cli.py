"""``chatlog optout add|remove|list`` and ``chatlog erase`` on the real stack (a Typer app with only these
modules registered, as chatlog.cli.main registers them)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from chatlog.cli import erase as erase_cli
from chatlog.cli import optout as optout_cli
from consent.settings import ConsentSettings
from core.errors import ChatlogError
from tests.integration.consent.filled_keyspace import TARGET_ID, TARGET_KEYS, Filled, read_stored

pytestmark = pytest.mark.integration


def cli() -> typer.Typer:
    app = typer.Typer()
    optout_cli.register(app)
    erase_cli.register(app)
    return app


def run(*args: str) -> Result:
    return CliRunner().invoke(cli(), list(args))


@pytest.fixture
def env(filled: Filled, optout_settings: ConsentSettings, monkeypatch: pytest.MonkeyPatch) -> Filled:
    monkeypatch.setenv("CHATLOG_TOPIC_OPTOUT", optout_settings.topic_optout)
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", filled.settings.cassandra_keyspace)
    return filled


def test_add_erases_list_shows_it_remove_lifts_and_the_audit_has_ids_only(env: Filled, session: Any) -> None:
    added = run("optout", "add", "--user-id", TARGET_ID, "--reason", "asked by mail")
    assert added.exit_code == 0, added.output
    assert f"opted out user {TARGET_ID}" in added.output
    assert f"erased user {TARGET_ID}:" in added.output
    assert "  channel_blocks: " in added.output and "  user_names: 2 row(s)" in added.output
    stored = read_stored(session, env.settings.cassandra_keyspace)
    assert stored.ids("channel", keys=TARGET_KEYS) == {} and stored.ids("user", keys=TARGET_KEYS) == {}

    listed = run("optout", "list")
    assert listed.exit_code == 0, listed.output
    assert listed.output.startswith(f"user {TARGET_ID} since ")
    assert 'reason="asked by mail"' in listed.output

    lifted = run("optout", "remove", "--user-id", TARGET_ID)
    assert lifted.exit_code == 0, lifted.output
    assert run("optout", "list").output.startswith("no opt-outs in ")

    audit = run("optout", "list", "--audit", "--json")
    assert audit.exit_code == 0, audit.output
    entries = [json.loads(line) for line in audit.output.splitlines()]
    assert [e["action"] for e in entries] == ["lift", "erase", "optout"]
    assert {(e["kind"], e["id"]) for e in entries} == {("user", TARGET_ID)}
    assert entries[1]["deleted"]["channel_blocks"] > 0
    assert all(e["by"].startswith("cli:") for e in entries)
    text = run("optout", "list", "--audit").output
    assert "message " not in text and "alone" not in text  # no chat text, ever


def test_keep_history_and_erase_of_a_channel_as_json(env: Filled, session: Any) -> None:
    keyspace = env.settings.cassandra_keyspace
    before = read_stored(session, keyspace)
    kept = run("optout", "add", "--channel-id", "502", "--keep-history")
    assert kept.exit_code == 0, kept.output
    assert "erased" not in kept.output
    assert read_stored(session, keyspace) == before
    erased = run("erase", "--channel-id", "502", "--json")
    assert erased.exit_code == 0, erased.output
    report = json.loads(erased.output)
    gone = set(env.ids(channel="502"))
    assert report["rows"]["channel_blocks"] == len(gone)
    after = read_stored(session, keyspace)
    assert after.channel == before.without("channel", gone) and after.user == before.without("user", gone)
    listed = run("optout", "list", "--channel-id", "502")
    assert "keep-history" in listed.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("optout", "add", "--user-id", "user5"), "digits only"),
        (("optout", "add", "--user-id", "1", "--channel-id", "2"), "exactly one of"),
        (("optout", "remove"), "exactly one of"),
        (("erase",), "needs --user-id"),
    ],
)
def test_bad_ids_are_one_line(args: tuple[str, ...], message: str) -> None:
    result = run(*args)
    assert isinstance(result.exception, ChatlogError)
    assert message in str(result.exception) and "\n" not in str(result.exception)


def test_services_down_are_one_line(env: Filled, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    result = run("optout", "add", "--user-id", TARGET_ID)
    assert isinstance(result.exception, ChatlogError)
    assert "CHATLOG_KAFKA_BOOTSTRAP_SERVERS" in str(result.exception)
    monkeypatch.delenv("CHATLOG_KAFKA_BOOTSTRAP_SERVERS")
    monkeypatch.setenv("CHATLOG_CASSANDRA_PORT", "1")
    result = run("erase", "--user-id", TARGET_ID)
    assert isinstance(result.exception, ChatlogError)
    assert "\n" not in str(result.exception)
    monkeypatch.delenv("CHATLOG_CASSANDRA_PORT")
    monkeypatch.setenv("CHATLOG_TOPIC_OPTOUT", "no.such.topic.here")
    result = run("optout", "list")
    assert isinstance(result.exception, ChatlogError)
    assert "no.such.topic.here does not exist" in str(result.exception)
