"""How a pool connection logs in: capabilities, password and a nick per connection.

Twitch: the configured account nick on every connection (with OAuth, sent as ``PASS oauth:...``),
else anonymous ``justinfan<digits>``. Standard IRCv3 servers (InspIRCd here) need a unique nick per
connection: derived from a base (the configured nick, else the worker id), the connection index and
a short random part, so two ingesters, or a restarted one whose old connections linger, never ask
for the same nick; a 433 (nick in use) gets a new random part.
"""

from __future__ import annotations

import ipaddress
import logging
import random
import re
import string
from dataclasses import dataclass

from core.errors import SettingsError
from core.settings import IrcSettings

TWITCH_CAPS = ("twitch.tv/tags", "twitch.tv/commands")
IRCV3_CAPS = ("message-tags", "server-time")  # msgid comes with message-tags

log = logging.getLogger(__name__)

_NOT_NICK = re.compile(r"[^A-Za-z0-9_\-\[\]\\^{}|`]")
_ALNUM = string.ascii_lowercase + string.digits


def anonymous_twitch_nick(rng: random.Random) -> str:
    return f"justinfan{rng.randrange(10_000, 100_000_000)}"


def connection_nick(base: str, conn_index: int, rng: random.Random, max_len: int = 30) -> str:
    """``<base>-<conn_index>-<4 random>``, cut to ``max_len``, valid as an IRC nick."""
    suffix = f"-{conn_index}-{''.join(rng.choice(_ALNUM) for _ in range(4))}"
    clean = _NOT_NICK.sub("", base)
    if not clean or not (clean[0].isalpha() or clean[0] in "_[]\\^{}|`"):
        clean = "c" + clean
    room = max_len - len(suffix)
    if room < 1:  # an absurd connection index: keep a valid nick of the allowed length
        return ("c" + suffix.replace("-", ""))[:max_len]
    return clean[:room] + suffix


@dataclass(frozen=True)
class Login:
    """Registration of one connection; ``nick()`` gives a (new) nick for a connection index."""

    flavor: str
    caps: tuple[str, ...]
    password: str | None
    account_nick: str | None  # Twitch with OAuth: the same account nick on every connection
    nick_base: str
    nick_max_len: int
    realname: str
    rng: random.Random

    def nick(self, conn_index: int) -> str:
        if self.flavor == "twitch":
            return self.account_nick or anonymous_twitch_nick(self.rng)
        return connection_nick(self.nick_base, conn_index, self.rng, self.nick_max_len)

    @property
    def unique_nicks(self) -> bool:
        """Whether a 433 (nick in use) can be fixed by choosing another nick."""
        return self.account_nick is None

    def registration(self, nick: str) -> list[str]:
        """The lines sent on connect. CAP REQ first so IRCv3 servers hold registration until CAP END."""
        lines = [f"CAP REQ :{' '.join(self.caps)}"] if self.caps else []
        if self.password:
            lines.append(f"PASS {self.password}")
        user = nick if self.flavor == "twitch" else "chatlog"
        lines += [f"NICK {nick}", f"USER {user} 0 * :{self.realname}"]
        return lines


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1): traffic that stays on the host."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def plaintext_token_warning(settings: IrcSettings) -> str | None:
    """One line when the OAuth token would cross the network unencrypted, else None."""
    token = settings.irc_oauth.get_secret_value() if settings.irc_oauth is not None else ""
    if not token or settings.irc_tls or is_loopback(settings.irc_host):
        return None
    return (
        f"CHATLOG_IRC_OAUTH is sent in plain text to {settings.irc_host}:{settings.irc_port} "
        "(CHATLOG_IRC_TLS=false): anyone on the path can read the token; set CHATLOG_IRC_TLS=true "
        "(Twitch: port 6697)"
    )


def login_from_settings(
    settings: IrcSettings, worker_id: str, rng: random.Random, nick_max_len: int = 30
) -> Login:
    warning = plaintext_token_warning(settings)
    if warning is not None:
        log.warning(warning)
    worker_id = re.sub(r"[\s\x00-\x1f]", "_", worker_id)[:64] or "worker"
    oauth = settings.irc_oauth.get_secret_value() if settings.irc_oauth is not None else None
    if settings.irc_flavor == "twitch":
        if oauth and not settings.irc_nick:
            raise SettingsError("setting irc_nick (CHATLOG_IRC_NICK): required with CHATLOG_IRC_OAUTH")
        password = (oauth if oauth.startswith("oauth:") else f"oauth:{oauth}") if oauth else None
        account = settings.irc_nick.lower() if (oauth and settings.irc_nick) else None
        if not oauth and settings.irc_nick:
            account = settings.irc_nick.lower()  # e.g. a fixed justinfan nick
        return Login(
            "twitch", TWITCH_CAPS, password, account, worker_id, nick_max_len, f"chatlog {worker_id}", rng
        )
    return Login(
        "ircv3",
        IRCV3_CAPS,
        oauth,
        None,
        settings.irc_nick or worker_id,
        nick_max_len,
        f"chatlog {worker_id}",
        rng,
    )
