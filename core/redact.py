"""The last line of defence for secrets: their values are masked in every log line and error chatlog
prints, whatever formatted them (settings keep them in ``SecretStr``; this catches what escapes that,
e.g. a librdkafka config dict in an exception)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Final

MASK: Final = "**********"
MIN_SECRET_LEN: Final = 4
"""Shorter values are not masked: they would mask ordinary words (and are no secret anyway)."""
_USERINFO: Final = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)[^\s/@:]+:(?!\d+/)[^\s@'\"]+@"  # a URL's: its password may hold a '/'
    r"|(?<![^\s'\"(,=\[<])[^\s/@:'\"]+:[^\s/@'\"]+@(?=[\w.\[-])"  # a bare host's: user:password@host
)
"""``user:password@`` before a host, as in a URL (``s3a://key:secret@bucket``) or a bootstrap server: settings
that are no secret themselves may carry one this way."""
_TOKEN_PREFIX: Final = "oauth:"


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the secret ``CHATLOG_*`` variables set in ``environ``, longest first."""
    from core.settings_env import secret_variables

    env = os.environ if environ is None else environ
    names = secret_variables()
    values = {v for k, v in env.items() if k.upper() in names and len(v) >= MIN_SECRET_LEN}
    values |= {p for k, v in env.items() if k.upper().startswith("CHATLOG_") for p in embedded_passwords(v)}
    bare = {v[len(_TOKEN_PREFIX) :] for v in values if v.lower().startswith(_TOKEN_PREFIX)}
    values |= {v for v in bare if len(v) >= MIN_SECRET_LEN}  # the IRC token as PASS sends it
    return sorted(values, key=len, reverse=True)


def embedded_passwords(value: str) -> set[str]:
    """The passwords of ``user:password@host`` credentials in a setting's value (a host list, a URL), each
    exactly as written: a ``/``, a space or an ``@`` in one (which :data:`_USERINFO` cannot tell from
    text around it) is masked whole wherever it is printed."""
    found = set()
    for part in value.split(","):
        userinfo = part.strip().rpartition("@")[0]  # up to the last `@`: a password may hold one
        userinfo = userinfo.split("://", 1)[-1]
        password = userinfo.partition(":")[2]
        if len(password) >= MIN_SECRET_LEN:
            found.add(password)
    return found


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` and any ``user:password@`` credentials masked."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme'] or ''}{MASK}@", text)
    return text


class SecretFilter(logging.Filter):
    """Masks the secrets' values in a record's message and traceback (a handler filter)."""

    def __init__(self, secrets: Iterable[str] | None = None) -> None:
        super().__init__()
        self.secrets = list(secret_values() if secrets is None else secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        return True


def install(secrets: Iterable[str] | None = None) -> SecretFilter:
    """Add a :class:`SecretFilter` to every handler of the root logger; returns it."""
    filt = SecretFilter(secrets)
    for handler in logging.getLogger().handlers:
        handler.addFilter(filt)
    return filt
