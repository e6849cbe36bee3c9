"""An OAuth token sent without TLS to another host is reported in one line (and only then)."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from core.settings import load
from ingest.irc.login import is_loopback, login_from_settings, plaintext_token_warning
from ingest.irc.settings import PoolSettings

TOKEN = "oauth:SUPERSECRET123"


def settings(**kw: Any) -> PoolSettings:
    return load(PoolSettings, irc_flavor="twitch", irc_nick="bot", **kw)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST."])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["irc.chat.twitch.tv", "10.0.0.1", "192.168.1.5", "::2", "localhost.evil"])
def test_other_hosts(host: str) -> None:
    assert not is_loopback(host)


def test_token_over_plain_text_to_a_remote_host_warns_once_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = settings(irc_host="irc.chat.twitch.tv", irc_port=6667, irc_tls=False, irc_oauth=TOKEN)
    with caplog.at_level(logging.WARNING, logger="ingest.irc.login"):
        login_from_settings(s, "w1", random.Random(1))
    (record,) = [r for r in caplog.records if r.name == "ingest.irc.login"]
    line = record.getMessage()
    assert "\n" not in line
    assert "CHATLOG_IRC_TLS" in line and "irc.chat.twitch.tv:6667" in line
    assert "SUPERSECRET123" not in line


@pytest.mark.parametrize(
    "kw",
    [
        {"irc_host": "irc.chat.twitch.tv", "irc_port": 6697, "irc_tls": True, "irc_oauth": TOKEN},
        {"irc_host": "127.0.0.1", "irc_tls": False, "irc_oauth": TOKEN},
        {"irc_host": "irc.chat.twitch.tv", "irc_tls": False},  # anonymous: no token to leak
        {"irc_host": "irc.chat.twitch.tv", "irc_tls": False, "irc_oauth": ""},
    ],
)
def test_no_warning_when_nothing_leaks(kw: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    s = settings(**kw)
    assert plaintext_token_warning(s) is None
    with caplog.at_level(logging.WARNING, logger="ingest.irc.login"):
        login_from_settings(s, "w1", random.Random(1))
    assert not [r for r in caplog.records if r.name == "ingest.irc.login"]
