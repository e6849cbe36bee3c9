"""The CHATLOG_* variable names the deployment files may set: a typo there would be silently ignored."""

from __future__ import annotations

import importlib
import inspect

from pydantic_settings import BaseSettings

from tests.unit.deploy import tooling


def settings_modules() -> list[str]:
    """Every ``settings.py`` of the chatlog packages (core.settings, ingest.settings, sink.settings...)."""
    return sorted(
        ".".join(path.relative_to(tooling.REPO).with_suffix("").parts)
        for package in ("core", "ingest", "sink", "serve", "chatlog")
        for path in (tooling.REPO / package).rglob("settings.py")
    )


def known_variables() -> frozenset[str]:
    names: set[str] = set()
    for module_name in settings_modules():
        module = importlib.import_module(module_name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseSettings) and cls.__module__ == module_name:
                prefix = str(cls.model_config.get("env_prefix", ""))
                names.update(f"{prefix}{field}".upper() for field in cls.model_fields)
    return frozenset(names)
