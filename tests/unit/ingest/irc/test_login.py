"""Registration lines and nicks for Twitch and standard IRCv3 servers; an OAuth token sent without TLS to
another host is reported in one line (and only then)."""

from __future__ import annotations

import logging
import random
import re
from typing import Any

import pytest

from core.errors import SettingsError
from core.settings import load
from ingest.irc.login import connection_nick, is_loopback, login_from_settings, plaintext_token_warning
from ingest.irc.settings import PoolSettings

TOKEN = "oauth:SUPERSECRET123"
NICK_RE = re.compile(r"[A-Za-z_\[\]\\^{}|`][A-Za-z0-9_\-\[\]\\^{}|`]*")


def pool_settings(**kw: Any) -> PoolSettings:
    return load(PoolSettings, **kw)


def test_twitch_anonymous_login() -> None:
    login = login_from_settings(
        pool_settings(irc_flavor="twitch", irc_nick="", irc_oauth=""), "w1", random.Random(1)
    )
    nick = login.nick(1)
    assert re.fullmatch(r"justinfan\d+", nick)
    assert login.registration(nick) == [
        "CAP REQ :twitch.tv/tags twitch.tv/commands",
        f"NICK {nick}",
        f"USER {nick} 0 * :chatlog w1",
    ]
    assert login.nick(2) != nick  # anonymous connections need not share a nick


def test_twitch_oauth_login_sends_pass_and_the_account_nick_on_every_connection() -> None:
    s = pool_settings(irc_flavor="twitch", irc_nick="MyBot", irc_oauth="abc123")
    login = login_from_settings(s, "w1", random.Random(1))
    assert login.nick(1) == login.nick(7) == "mybot"
    assert not login.unique_nicks
    lines = login.registration("mybot")
    assert lines[:3] == ["CAP REQ :twitch.tv/tags twitch.tv/commands", "PASS oauth:abc123", "NICK mybot"]
    prefixed = pool_settings(irc_flavor="twitch", irc_nick="MyBot", irc_oauth="oauth:abc123")
    assert login_from_settings(prefixed, "w1", random.Random(1)).password == "oauth:abc123"


def test_twitch_oauth_without_nick_is_a_one_line_settings_error() -> None:
    with pytest.raises(SettingsError, match="CHATLOG_IRC_NICK"):
        login_from_settings(
            pool_settings(irc_flavor="twitch", irc_nick="", irc_oauth="abc"), "w1", random.Random()
        )


def test_ircv3_login_requests_message_tags_and_server_time_with_unique_nicks() -> None:
    login = login_from_settings(
        pool_settings(irc_flavor="ircv3", irc_nick="", irc_oauth=""), "ingest-r0-abc", random.Random(2)
    )
    nicks = {login.nick(i) for i in range(1, 200)}
    assert len(nicks) == 199
    assert login.unique_nicks
    nick = login.nick(5)
    assert login.registration(nick)[0] == "CAP REQ :message-tags server-time"
    assert nick.startswith("ingest-r0-abc-5-")


@pytest.mark.parametrize(
    ("base", "index"),
    [
        ("w1", 1),
        ("a-very-long-worker-id-from-kubernetes-pod-7f9c", 12345),
        ("9starts-with-digit", 3),
        ("ü ñ!", 2),
        ("", 1),
    ],
)
def test_connection_nicks_are_valid_and_fit_nicklen(base: str, index: int) -> None:
    nick = connection_nick(base, index, random.Random(0), max_len=30)
    assert len(nick) <= 30
    assert NICK_RE.fullmatch(nick), nick
    assert f"-{index}-" in nick


def test_worker_id_with_spaces_cannot_break_the_user_line() -> None:
    login = login_from_settings(
        pool_settings(irc_flavor="ircv3", irc_nick="", irc_oauth=""), "a b\r\nQUIT", random.Random()
    )
    assert all("\r" not in line and "\n" not in line for line in login.registration("x"))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST."])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["irc.chat.twitch.tv", "10.0.0.1", "192.168.1.5", "::2", "localhost.evil"])
def test_other_hosts(host: str) -> None:
    assert not is_loopback(host)


def test_token_over_plain_text_to_a_remote_host_warns_once_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = pool_settings(
        irc_flavor="twitch",
        irc_nick="bot",
        irc_host="irc.chat.twitch.tv",
        irc_port=6667,
        irc_tls=False,
        irc_oauth=TOKEN,
    )
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
    s = pool_settings(irc_flavor="twitch", irc_nick="bot", **kw)
    assert plaintext_token_warning(s) is None
    with caplog.at_level(logging.WARNING, logger="ingest.irc.login"):
        login_from_settings(s, "w1", random.Random(1))
    assert not [r for r in caplog.records if r.name == "ingest.irc.login"]
