"""The ``CHATLOG_*`` variables chatlog knows, so that a misspelt one is reported instead of ignored.

The known names come from the settings classes plus the few variables read directly from the
environment (:data:`DIRECT_VARIABLES`). The classes are given by the caller, or default to every class
imported so far (:data:`core.settings.SETTINGS_CLASSES`): this base layer never imports the packages
above it; the operator layer imports every settings module (``chatlog/cli/schema.py``) before the
command line checks its environment. An unknown variable is a one-line warning naming the closest
known one; with ``CHATLOG_STRICT_SETTINGS=true`` it is an error.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple

from core.errors import SettingsError

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

PREFIX: Final = "CHATLOG_"
STRICT: Final = "CHATLOG_STRICT_SETTINGS"


class DirectVariable(NamedTuple):
    """A variable read with ``os.environ`` rather than through a settings class."""

    type: str
    default: str
    where: str
    description: str


DIRECT_VARIABLES: Final[Mapping[str, DirectVariable]] = {
    "CHATLOG_HOME": DirectVariable(
        "path",
        "the working directory",
        "core/settings.py",
        "Where the relative defaults live: the local stack's .state/ and .cache/, the sink's checkpoint, "
        "results/ of the demo and the benchmarks. Read once, when chatlog starts.",
    ),
    STRICT: DirectVariable(
        "bool", "false", "core/settings_env.py", "Unknown CHATLOG_* variables are an error, not a warning."
    ),
    "CHATLOG_MAVEN_REPOSITORY": DirectVariable(
        "URL", "Maven Central", "core/maven.py", "The Maven repository the jars come from."
    ),
    "CHATLOG_TEST_KEEP_STACK": DirectVariable(
        "bool", "unset", "tests/fixtures/stack.py", "1: leave a stack the tests started running."
    ),
    "CHATLOG_TEST_KEEP_CLUSTER": DirectVariable(
        "bool",
        "unset",
        "tests/integration/cluster/conftest.py",
        "1: leave a multi-node stack the cluster tests started running.",
    ),
    "CHATLOG_TEST_CHROMIUM": DirectVariable(
        "path", "/usr/bin/chromium", "tests/browser/conftest.py", "The chromium the browser tests drive."
    ),
    "CHATLOG_WEB_SCREENSHOTS": DirectVariable(
        "path",
        "unset",
        "tests/browser/conftest.py",
        "A directory where the browser tests leave web_<name>.png of each page they check.",
    ),
}
"""Variables read with ``os.environ`` rather than through a settings class, and where."""

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"", "0", "false", "no", "off"})


def registered_classes() -> list[type[BaseSettings]]:
    """Every settings class imported so far (the caller imports the settings modules it knows)."""
    from core.settings import SETTINGS_CLASSES

    return list(SETTINGS_CLASSES)


def known_variables(classes: Iterable[type[BaseSettings]] | None = None) -> frozenset[str]:
    """Every ``CHATLOG_*`` name chatlog reads."""
    from core.settings_errors import env_name

    names = set(DIRECT_VARIABLES)
    for cls in registered_classes() if classes is None else classes:
        names.update(env_name(cls, field) for field in cls.model_fields)
    return frozenset(names)


def secret_variables(classes: Iterable[type[BaseSettings]] | None = None) -> frozenset[str]:
    """The names whose values are secrets (``SecretStr`` fields)."""
    from core.settings_errors import env_name, secret_fields

    out: set[str] = set()
    for cls in registered_classes() if classes is None else classes:
        out.update(env_name(cls, field) for field in secret_fields(cls))
    return frozenset(out)


REMOVED_VARIABLES: Final[Mapping[str, str]] = {
    "CHATLOG_SINK_DEDUP": "the sink drops copies in its writers only now (their window: "
    "CHATLOG_SINK_DEDUP_WINDOW)",
    "CHATLOG_SINK_WATERMARK": "the sink drops copies in its writers only now: set CHATLOG_SINK_DEDUP_WINDOW",
    "CHATLOG_SPARK_STATE_STORE": "the sink keeps no Spark state any more (its writers drop copies): unset it",
    "CHATLOG_SINK_SPARK_PRIVATE_API": "the sink has one hand-off to its writers now (sink/spark_private.py): "
    "unset it",
    "CHATLOG_SINK_USER_MONTH_ROWS": "a user-month's size is bounded in bytes per writer now (store/keys.py "
    "PART_BYTES): unset it",
    "CHATLOG_SERVE_READ_AHEAD": "reads start the next period's query ahead by themselves: unset it",
    "CHATLOG_SERVE_PROBE_BATCH": "a user's months are read from their index: unset it",
}
"""Variables of settings that were removed -> what replaces them: setting one is an error saying so (it would
otherwise be silently ignored while its operator believes it applies)."""


def removed_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per removed ``CHATLOG_*`` variable set in ``environ``, naming what replaces it."""
    return [
        f"setting {name} was removed: {REMOVED_VARIABLES[name.upper()]}"
        for name in sorted(environ)
        if name.upper() in REMOVED_VARIABLES
    ]


def unknown_variables(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """One line per ``CHATLOG_*`` variable in ``environ`` that chatlog does not read, with a hint."""
    lines = []
    for name in sorted(n for n in environ if n.upper().startswith(PREFIX) and n.upper() not in known):
        close = closest_variable(name.upper(), known)
        hint = f" (did you mean {close}?)" if close else ""
        lines.append(f"unknown setting {name}{hint}")
    return lines


_SYNONYMS: Final = {"TOKEN": "OAUTH", "PASS": "PASSWORD", "PWD": "PASSWORD", "USER": "USERNAME"}


def closest_variable(name: str, known: frozenset[str]) -> str | None:
    """The known name ``name`` most likely meant: one it begins (``..._PASS``: ``..._PASSWORD``), one a
    common synonym gives (``..._TOKEN``: ``..._OAUTH``), else the closest spelling; None if none is."""
    longer = sorted((k for k in known if k.startswith(name)), key=len)
    if longer:
        return longer[0]
    head, _, last = name.rpartition("_")
    synonym = f"{head}_{_SYNONYMS[last]}" if last in _SYNONYMS else None
    if synonym in known:
        return synonym
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def strict(environ: Mapping[str, str]) -> bool:
    value = environ.get(STRICT, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"setting {STRICT}: {value[:20]!r} is not true or false")


def check_environment(
    environ: Mapping[str, str], classes: Iterable[type[BaseSettings]] | None = None
) -> list[str]:
    """Warnings about unknown ``CHATLOG_*`` variables; :class:`SettingsError` instead when strict, and always
    for a removed one (:data:`REMOVED_VARIABLES`)."""
    is_strict = strict(environ)
    removed = removed_variables(environ)
    if removed:
        raise SettingsError("; ".join(removed))
    environ = {k: v for k, v in environ.items() if k.upper() not in REMOVED_VARIABLES}
    lines = unknown_variables(environ, known_variables(classes))
    if lines and is_strict:
        raise SettingsError(f"{'; '.join(lines)} ({STRICT} is on)")
    return [f"{line}: it is ignored" for line in lines]
