"""The ``CHATLOG_*`` variables chatlog knows, so that a misspelt one is reported instead of ignored.

The known names come from every settings class (each adds itself to
:data:`core.settings.SETTINGS_CLASSES`; :func:`settings_classes` imports every ``settings.py`` of the
packages first) plus the few variables read directly from the environment (:data:`DIRECT_VARIABLES`).
An unknown variable is a one-line warning naming the closest known one; with
``CHATLOG_STRICT_SETTINGS=true`` it is an error.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from core.errors import SettingsError

if TYPE_CHECKING:  # pydantic is imported only when there is a CHATLOG_* variable to check
    from pydantic_settings import BaseSettings

PREFIX: Final = "CHATLOG_"
STRICT: Final = "CHATLOG_STRICT_SETTINGS"
DIRECT_VARIABLES: Final[Mapping[str, str]] = {
    STRICT: "core/settings_env.py: unknown CHATLOG_* variables are an error, not a warning",
    "CHATLOG_MAVEN_REPOSITORY": "core/maven.py: the Maven repository the jars come from",
    "CHATLOG_TEST_KEEP_STACK": "tests/conftest.py: leave a stack the tests started running",
}
"""Variables read with ``os.environ`` rather than through a settings class, and where."""

SETTINGS_PACKAGES: Final = ("core", "ingest", "sink", "serve", "chatlog")
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"", "0", "false", "no", "off"})


def settings_modules() -> list[str]:
    """Every ``settings.py`` module of :data:`SETTINGS_PACKAGES` (e.g. ``ingest.irc.settings``)."""
    out = []
    for package in SETTINGS_PACKAGES:
        root = Path(importlib.import_module(package).__file__ or "").parent
        for path in sorted(root.rglob("settings.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            out.append(".".join(parts))
    return out


def settings_classes() -> list[type[BaseSettings]]:
    """Every settings class of the project (importing every settings module adds its classes)."""
    from core import settings

    for name in settings_modules():
        importlib.import_module(name)
    return list(settings.SETTINGS_CLASSES)


def known_variables(classes: Iterable[type[BaseSettings]] | None = None) -> frozenset[str]:
    """Every ``CHATLOG_*`` name chatlog reads."""
    from core.settings_errors import env_name

    names = set(DIRECT_VARIABLES)
    for cls in settings_classes() if classes is None else classes:
        names.update(env_name(cls, field) for field in cls.model_fields)
    return frozenset(names)


def secret_variables(classes: Iterable[type[BaseSettings]] | None = None) -> frozenset[str]:
    """The names whose values are secrets (``SecretStr`` fields)."""
    from core.settings_errors import env_name, secret_fields

    out: set[str] = set()
    for cls in settings_classes() if classes is None else classes:
        out.update(env_name(cls, field) for field in secret_fields(cls))
    return frozenset(out)


def unknown_variables(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """One line per ``CHATLOG_*`` variable in ``environ`` that chatlog does not read, with a hint."""
    lines = []
    for name in sorted(n for n in environ if n.upper().startswith(PREFIX) and n.upper() not in known):
        close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        lines.append(f"unknown setting {name}{hint}")
    return lines


def strict(environ: Mapping[str, str]) -> bool:
    value = environ.get(STRICT, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"setting {STRICT}: {value[:20]!r} is not true or false")


def check_environment(environ: Mapping[str, str]) -> list[str]:
    """Warnings about unknown ``CHATLOG_*`` variables; :class:`SettingsError` instead when strict."""
    is_strict = strict(environ)
    lines = unknown_variables(environ, known_variables())
    if lines and is_strict:
        raise SettingsError(f"{'; '.join(lines)} ({STRICT} is on)")
    return [f"{line}: it is ignored" for line in lines]
