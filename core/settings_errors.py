"""One line for a settings validation error, never echoing a secret.

pydantic's error carries the raw ``input``. For a field that is that one field's value; for a
model-level validator (``loc == ()``) it is *every* variable read, secrets included. So the value is
shown only for a single, non-secret field, and truncated.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, SecretBytes, SecretStr, ValidationError
from pydantic_core import ErrorDetails

from core.errors import one_line

MAX_SHOWN = 60
"""Most characters of an offending value repeated in the message."""

_SECRET_TYPES = (SecretStr, SecretBytes)


def is_secret(annotation: Any) -> bool:
    """Whether a field's annotation is a secret type, or an optional/union containing one."""
    if annotation in _SECRET_TYPES:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType or origin is typing.Annotated:
        return any(is_secret(arg) for arg in typing.get_args(annotation))
    return False


def secret_fields(cls: type[BaseModel]) -> frozenset[str]:
    """Names of the fields of ``cls`` whose values are secrets."""
    return frozenset(name for name, info in cls.model_fields.items() if is_secret(info.annotation))


def env_name(cls: type[BaseModel], field: str) -> str:
    """The environment variable of ``field`` (``CHATLOG_`` + upper-case name)."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    return f"{prefix}{field}".upper()


def shown_value(value: Any) -> str:
    """``repr`` of a scalar, cut to :data:`MAX_SHOWN` characters; empty for anything else."""
    if not isinstance(value, str | int | float | bool) or isinstance(value, SecretStr):
        return ""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else f"{text[: MAX_SHOWN - 3]}..."


def describe_error(cls: type[BaseModel], err: ErrorDetails, flags: Mapping[str, str] | None = None) -> str:
    """``setting F (CHATLOG_F): what is wrong (got 'value')``; no value for secrets or model errors.
    ``flags``: the command-line option of each field the command line gave (``--stale``): an error in
    one names that option, not a variable the user did not set."""
    msg = one_line(err["msg"], None).removeprefix("Value error, ")
    loc = err["loc"]
    if not loc:
        return f"settings: {msg}"
    field = str(loc[0])
    flag = (flags or {}).get(field)
    where = f"option {flag}" if flag else f"setting {field} ({env_name(cls, field)})"
    if len(loc) != 1 or field in secret_fields(cls) or field not in cls.model_fields:
        return f"{where}: {msg}"
    value = shown_value(err.get("input"))
    return f"{where}: {msg} (got {value})" if value else f"{where}: {msg}"


def describe(cls: type[BaseModel], exc: ValidationError, flags: Mapping[str, str] | None = None) -> str:
    """One line for ``exc``: its first error, and how many more there are."""
    errors = exc.errors(include_url=False, include_context=False, include_input=True)
    line = describe_error(cls, errors[0], flags)
    return line if len(errors) == 1 else f"{line} (and {len(errors) - 1} more)"
