"""Consent settings: admin keys as name:secret pairs, never echoed."""

from __future__ import annotations

import pytest

from consent.settings import ConsentSettings, optout_topic, parse_admin_keys
from core.errors import SettingsError
from core.settings import KafkaSettings, load

SECRET = "0123456789abcdef-secret"


def test_pairs_are_parsed_by_name() -> None:
    keys = parse_admin_keys(f"ops:{SECRET}, bot:{SECRET}x")
    assert {n: k.get_secret_value() for n, k in keys.items()} == {"ops": SECRET, "bot": SECRET + "x"}
    assert parse_admin_keys("") == {}
    assert list(parse_admin_keys(SECRET)) == ["admin"]  # a bare secret


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ops:", "shorter than 16"),
        ("ops:short", "shorter than 16"),
        (f"ops:{SECRET},ops:{SECRET}", "pair 2 is given before"),
        ("SEKRETpart:tail", "pair 1 is shorter than 16"),  # a bare secret with a ':' in it: its start unsaid
        (f"bad name:{SECRET}", "pair 1 is not name:secret"),
    ],
)
def test_bad_keys_are_one_line_without_the_secret(
    text: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHATLOG_SERVE_ADMIN_KEYS", text)
    with pytest.raises(SettingsError) as caught:
        load(ConsentSettings)
    assert message in str(caught.value) and "CHATLOG_SERVE_ADMIN_KEYS" in str(caught.value)
    assert SECRET not in str(caught.value) and "short" not in str(caught.value).split("shorter")[0]
    assert "SEKRET" not in str(caught.value) and "ops" not in str(caught.value)


def test_the_topic_defaults_and_follows_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert optout_topic(KafkaSettings()) == "chatlog.optout"
    monkeypatch.setenv("CHATLOG_TOPIC_OPTOUT", "x.optout")
    assert optout_topic(load(ConsentSettings)) == "x.optout"
    assert load(ConsentSettings).optout_command == "!chatlog"
