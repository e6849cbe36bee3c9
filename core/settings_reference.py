"""The settings reference (``docs/settings.md``): every ``CHATLOG_*`` variable, rendered from the classes.

One section per settings class with the variables it declares (name, type, default, secret or not,
description); a class also reads the variables of the classes it builds on. Then the few variables read
directly from the environment. A secret's value is never rendered, only whether a default exists.
Defaults under :data:`core.settings.CHATLOG_HOME` or the temporary directory are written relative to
them, so the page is the same on every machine.
"""

from __future__ import annotations

import enum
import inspect
import tempfile
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from core.errors import one_line
from core.settings import CHATLOG_HOME, HOME_VARIABLE
from core.settings_env import DirectVariable
from core.settings_errors import env_name, is_secret

TITLE: Final = "# Settings reference"
_TYPES: Final[Mapping[object, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    SecretStr: "string",
}
_BOUNDS: Final = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))


def _table_text(text: str) -> str:
    """``text`` on one line (:func:`core.errors.one_line`), its ``|`` escaped for a Markdown table."""
    return one_line(text, None).replace("|", "\\|")


def cell(text: str) -> str:
    """Prose safe inside a Markdown table cell (``<state_dir>`` is not taken for an HTML tag)."""
    return _table_text(text).replace("<", "&lt;").replace(">", "&gt;")


def code(text: str) -> str:
    return f"`{_table_text(text)}`"


def own_fields(cls: type[BaseSettings]) -> list[str]:
    """The fields ``cls`` declares itself (not those it inherits), in declaration order."""
    declared = inspect.get_annotations(cls)
    return [name for name in cls.model_fields if name in declared]


def type_name(annotation: Any) -> str:
    """``integer``, ``path``, ``one of `a`, `b```... for a field's annotation (``None`` left out)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(code(str(arg)) for arg in typing.get_args(annotation))
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(type_name(a) for a in typing.get_args(annotation) if a is not type(None))
    return _TYPES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def constraints(info: FieldInfo) -> str:
    """The field's bounds and pattern, e.g. ``≥ 1, ≤ 65535``."""
    out: list[str] = []
    for item in info.metadata:
        out.extend(
            f"{sign} {getattr(item, key)}" for key, sign in _BOUNDS if getattr(item, key, None) is not None
        )
        if getattr(item, "min_length", None) is not None:
            out.append(f"length ≥ {item.min_length}")
        if getattr(item, "pattern", None) is not None:
            out.append(f"matching {code(str(item.pattern))}")
    return ", ".join(out)


def default_text(info: FieldInfo, home: Path = CHATLOG_HOME) -> str:
    """The default as a reader would set it; paths under ``home`` or the temporary directory relative."""
    if info.default_factory is not None or info.default is PydanticUndefined:
        return "computed" if info.default_factory is not None else "required"
    value = info.default
    if value is None:
        return "unset"
    if is_secret(info.annotation):
        return "set (secret)"
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, Path):
        for root, name in ((home, f"${HOME_VARIABLE}"), (Path(tempfile.gettempdir()), "<temp dir>")):
            if value.is_relative_to(root):
                return code(str(Path(name) / value.relative_to(root)))
    return code(str(value))


def field_row(cls: type[BaseSettings], name: str, home: Path = CHATLOG_HOME) -> str:
    info = cls.model_fields[name]
    kind = type_name(info.annotation)
    bounds = constraints(info)
    kind = f"{kind}, {bounds}" if bounds else kind
    secret = "yes" if is_secret(info.annotation) else ""
    cells = (
        code(env_name(cls, name)),
        cell(kind),
        default_text(info, home),
        secret,
        cell(info.description or ""),
    )
    return "| " + " | ".join(cells) + " |"


def summary(cls: type[BaseSettings]) -> str:
    """The first paragraph of the class's docstring, on one line."""
    return cell((cls.__doc__ or "").strip().split("\n\n")[0])


def module_path(cls: type[BaseSettings]) -> str:
    return cls.__module__.replace(".", "/") + ".py"


def bases(cls: type[BaseSettings], known: Iterable[type[BaseSettings]]) -> list[str]:
    """The classes of ``known`` that ``cls`` directly builds on."""
    members = set(known)
    return [base.__name__ for base in cls.__bases__ if base in members]


def render(
    classes: Iterable[type[BaseSettings]],
    direct: Mapping[str, DirectVariable],
    *,
    command: str,
    home: Path = CHATLOG_HOME,
) -> str:
    """The whole page for ``classes`` (in that order) and the ``direct`` variables."""
    ordered = [c for c in classes if not c.__name__.startswith("_")]
    lines = [
        TITLE,
        "",
        f"<!-- Generated from the settings classes by `{command}`; do not edit by hand. -->",
        "",
        "Every setting is a `CHATLOG_*` environment variable; a command's flags override it. A wrong value "
        "is reported in one line naming the variable; an unknown `CHATLOG_*` variable is reported in one "
        "line naming the closest known one (an error with `CHATLOG_STRICT_SETTINGS=true`).",
        "",
        f"Defaults written `${HOME_VARIABLE}/...` are relative to `{HOME_VARIABLE}`: the working directory "
        "when chatlog starts, unless the variable is set (`make` runs in the checkout, so there the "
        "local stack's `.state/` and `.cache/` are the checkout's). A secret (the `secret` column) is "
        "never printed: not in logs, errors or this page.",
        "",
        "Each class reads the variables listed in its section and those of the classes it builds on.",
        "",
        "| class | module | what for | builds on |",
        "|---|---|---|---|",
    ]
    for cls in ordered:
        listed = ", ".join(f"`{b}`" for b in bases(cls, ordered)) or "-"
        lines.append(f"| `{cls.__name__}` | `{module_path(cls)}` | {summary(cls)} | {listed} |")
    for cls in ordered:
        lines += ["", f"## {cls.__name__}", "", f"`{module_path(cls)}`: {summary(cls)}"]
        built_on = bases(cls, ordered)
        if built_on:
            lines += ["", "Also reads the variables of " + ", ".join(f"`{b}`" for b in built_on) + "."]
        names = own_fields(cls)
        if names:
            lines += ["", "| variable | type | default | secret | description |", "|---|---|---|---|---|"]
            lines += [field_row(cls, name, home) for name in names]
    lines += [
        "",
        "## Read directly from the environment",
        "",
        "| variable | type | default | read in | description |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {code(name)} | {cell(v.type)} | {cell(v.default)} | `{v.where}` | {cell(v.description)} |"
        for name, v in sorted(direct.items())
    ]
    return "\n".join(lines) + "\n"
