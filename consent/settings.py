"""Settings of consent (issue 20): the opt-out topic, the self-service command, the admin API keys."""

from __future__ import annotations

import re
from typing import Final

from pydantic import Field, PositiveFloat, SecretStr, field_validator

from core.settings import KafkaSettings

DEFAULT_TOPIC: Final = "chatlog.optout"
_KEY_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,40}")
MIN_SECRET_CHARS: Final = 16
DEFAULT_KEY_NAME: Final = "admin"
"""Name of a key given without one (``CHATLOG_SERVE_ADMIN_KEYS=<secret>``)."""


def parse_admin_keys(text: str) -> dict[str, SecretStr]:
    """``name:secret[,name:secret...]`` -> {name: secret} (a bare ``secret`` is named ``admin``); ValueError
    naming the pair (never the secret)."""
    keys: dict[str, SecretStr] = {}
    for number, pair in enumerate((p.strip() for p in text.split(",")), 1):
        if not pair:
            continue
        name, sep, secret = pair.partition(":")
        name = name.strip()
        if not sep:  # a bare secret: the key named "admin"
            name, secret = DEFAULT_KEY_NAME, pair
        if not _KEY_NAME.fullmatch(name):
            raise ValueError(f"pair {number} is not name:secret (name: letters, digits, _ . -)")
        if len(secret) < MIN_SECRET_CHARS:
            # by its number, never its name: in a mistyped pair the "name" may be the secret's own start
            raise ValueError(f"the secret of pair {number} is shorter than {MIN_SECRET_CHARS} characters")
        if name in keys:
            raise ValueError(f"the key name of pair {number} is given before")
        keys[name] = SecretStr(secret)
    return keys


class ConsentSettings(KafkaSettings):
    """Consent: the opt-out registry (topic ``chatlog.optout``), self-service codes, the admin API."""

    optout_command: str = Field(
        default="!chatlog",
        min_length=1,
        max_length=40,
        pattern=r"^\S+$",
        description="Chat command word of self-service opt-out: `<word> optout CODE` in a logged channel.",
    )
    optout_command_aliases: str = Field(
        default="!justlog !rustlog",
        max_length=200,
        description=(
            "Other command words accepted for the same command, space-separated (empty: none). The "
            "default makes the opt-out panels of justlog's and rustlog's web frontends work: they tell "
            "users to type `!justlog optout CODE` / `!rustlog optout CODE`."
        ),
    )
    optout_code_ttl_s: int = Field(
        default=600, ge=30, le=7 * 86400, description="Seconds a self-service opt-out code stays valid."
    )
    optout_code_rate: str = Field(
        default="5/minute",
        description=(
            "Self-service codes (`POST /optout`) one client address may ask for, as `N/second|minute|hour` "
            "(more: a 429); behind a proxy, run `chatlog serve` with uvicorn's forwarded-allow-ips so the "
            "address is the client's."
        ),
    )
    optout_code_rate_total: str = Field(
        default="120/minute",
        description="Self-service codes all clients together may ask for (each: a record and an audit row).",
    )
    optout_ready_timeout_s: PositiveFloat = Field(
        default=30.0,
        description="Seconds a service waits at start for the opt-out registry to read the whole topic.",
    )
    serve_consent: bool = Field(
        default=True,
        description=(
            "`chatlog serve` reads the opt-out registry at start (refusing to start without it) and answers "
            "403 for opted-out users and channels; false: nothing is enforced (a deployment that logs no "
            "Twitch chat)."
        ),
    )
    serve_admin_keys: SecretStr | None = Field(
        default=None,
        description=(
            "Keys of the consent admin API (`/admin/optout`, `/admin/erase`) as name:secret pairs, comma "
            "separated (secrets of 16+ characters; a bare secret is named admin); the name is written to "
            "the audit. Unset: those routes answer 404 (secret)."
        ),
    )

    @field_validator("optout_code_rate", "optout_code_rate_total")
    @classmethod
    def _rate(cls, value: str) -> str:
        from limits import parse

        try:
            parse(value)
        except ValueError:
            raise ValueError("not a rate such as 5/minute (N per second, minute, hour or day)") from None
        return value

    @field_validator("serve_admin_keys")
    @classmethod
    def _keys_parse(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_admin_keys(value.get_secret_value())
        return value

    def optout_aliases(self) -> tuple[str, ...]:
        """The words of ``optout_command_aliases``."""
        return tuple(self.optout_command_aliases.split())

    def admin_keys(self) -> dict[str, SecretStr]:
        """{key name: secret} of ``serve_admin_keys`` (empty when unset)."""
        if self.serve_admin_keys is None:
            return {}
        return parse_admin_keys(self.serve_admin_keys.get_secret_value())


def optout_topic(settings: KafkaSettings) -> str:
    """The opt-out topic of ``settings`` (its ``topic_optout`` when it has one, else the default)."""
    return settings.topic_optout
