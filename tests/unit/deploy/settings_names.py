"""The CHATLOG_* variable names the deployment files may set: a typo there would be silently ignored."""

from __future__ import annotations

from chatlog.cli.schema import settings_classes
from core import settings_env


def known_variables() -> frozenset[str]:
    """Every variable chatlog reads: those of every settings class (the catalog of chatlog/cli/schema.py)
    and those read directly from the environment, the same names the command line checks."""
    return settings_env.known_variables(settings_classes())
