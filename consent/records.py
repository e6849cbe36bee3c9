"""The records of the ``chatlog.optout`` topic (compacted): keys, values, and their JSON.

Keys: ``user:<user id>`` and ``channel:<channel id>`` (numeric Twitch ids) hold an :class:`OptOut`;
``code:<code>`` holds a self-service :class:`Code`. A tombstone (value None) lifts an opt-out or retires a
code. Values are JSON objects of the pydantic models below.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ChatlogError

Kind = Literal["user", "channel"]
KINDS: Final[tuple[Kind, ...]] = ("user", "channel")
CODE_PREFIX: Final = "code"

ID_PATTERN: Final = re.compile(r"[0-9]{1,20}")
"""A Twitch user or channel (room) id: ASCII digits."""

CODE_ALPHABET: Final = "23456789abcdefghjkmnpqrstuvwxyz"
"""Characters of a self-service code: URL-safe, lower case, without look-alikes (0/o, 1/l/i)."""
CODE_LENGTH: Final = 8
CODE_PATTERN: Final = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")


class InvalidRecord(ChatlogError):
    """A key or value of the opt-out topic that is not one of ours; one line."""


class OptOut(BaseModel):
    """A user or a channel that opted out. ``by``: who registered it (``cli:<login>``, ``api:<key name>``,
    ``code:<code>``); ``at``: epoch ms; ``keep_history``: the stored rows were not erased."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: Kind
    id: str = Field(pattern=ID_PATTERN.pattern)
    reason: str | None = None
    by: str
    at: int
    keep_history: bool = False

    @property
    def key(self) -> str:
        return key_of(self.kind, self.id)


class Code(BaseModel):
    """A self-service code: whoever types ``<command> optout <code>`` in a logged channel before
    ``expires_at`` (epoch ms) opts out. Single use: retired (tombstoned) once used."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    code: str = Field(pattern=CODE_PATTERN.pattern)
    expires_at: int
    by: str

    @property
    def key(self) -> str:
        return f"{CODE_PREFIX}:{self.code}"


Value = OptOut | Code


def check_id(kind: str, value: str) -> str:
    """``value`` stripped when it is a Twitch id (ASCII digits) and ``kind`` user or channel; else
    :class:`InvalidRecord` (one line)."""
    if kind not in KINDS:
        raise InvalidRecord(f"kind must be user or channel, not {kind[:20]!r}")
    text = value.strip()
    if not ID_PATTERN.fullmatch(text):
        raise InvalidRecord(f"a {kind} id is a Twitch id (digits only), not {value[:40]!r}")
    return text


def key_of(kind: str, value: str) -> str:
    """The topic key of an opt-out: ``user:<id>`` or ``channel:<id>`` (the id checked)."""
    return f"{kind}:{check_id(kind, value)}"


def login_digest(login: str) -> str:
    """The digest under which an erased user's login is kept (``erased_logins``): SHA-256 hex of the
    lower-case login. Matches a deleted message's ``login`` tag without keeping the name in clear."""
    return hashlib.sha256(login.lower().encode()).hexdigest()


def code_key(code: str) -> str:
    return f"{CODE_PREFIX}:{code}"


def new_code() -> str:
    """A fresh random code (``secrets``): 8 characters of :data:`CODE_ALPHABET` (~39 bits)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(text: str) -> str | None:
    """``text`` as a code (stripped, lower case) when it has the form of one, else None."""
    code = text.strip().lower()
    return code if CODE_PATTERN.fullmatch(code) else None


def split_key(key: str) -> tuple[str, str]:
    """(prefix, rest) of a topic key; InvalidRecord for a key of another form."""
    prefix, sep, rest = key.partition(":")
    if not sep or prefix not in (*KINDS, CODE_PREFIX) or not rest:
        raise InvalidRecord(f"not an opt-out topic key: {key[:60]!r}")
    return prefix, rest


def encode(value: Value) -> bytes:
    return value.model_dump_json().encode()


def decode(key: str, value: bytes | None) -> Value | None:
    """The record's value (None: a tombstone); InvalidRecord when the key or value is not ours, or the
    value does not match its key."""
    prefix, _rest = split_key(key)
    if value is None:
        return None
    try:
        decoded: Value = (
            Code.model_validate_json(value) if prefix == CODE_PREFIX else OptOut.model_validate_json(value)
        )
    except ValidationError as exc:
        raise InvalidRecord(f"record {key[:60]!r}: {exc.error_count()} invalid field(s)") from None
    if decoded.key != key:
        raise InvalidRecord(f"record {key[:60]!r} holds a value of key {decoded.key[:60]!r}")
    return decoded
