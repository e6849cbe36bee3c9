"""chatlog/cli/schema.py: the catalog of settings modules, and docs/settings.md, the settings reference
generated from them (``chatlog schema settings --output docs/settings.md``), which must stay current."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from pydantic_settings import BaseSettings

from chatlog.cli import schema
from core.settings_env import DIRECT_VARIABLES, known_variables, secret_variables
from tests.unit.cli_runs import chatlog

REPO = Path(__file__).resolve().parents[4]
PACKAGES = ("schemas", "core", "consent", "ingest", "sink", "serve", "chatlog", "bench")


def test_the_catalog_holds_every_settings_module_of_the_project() -> None:
    found = {
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for package in PACKAGES
        for path in (REPO / package).rglob("settings.py")
    }
    assert {module.__name__ for module in schema.SETTINGS_MODULES} == found


def test_every_settings_class_of_every_settings_module_is_listed() -> None:
    listed = schema.settings_classes()
    for module in schema.SETTINGS_MODULES:
        name = module.__name__
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if issubclass(cls, BaseSettings) and cls.__module__ == name and not cls.__name__.startswith("_"):
                assert cls in listed, f"{name}.{cls.__name__} is not listed"
    assert len(listed) == len(set(listed))


def test_docs_settings_md_is_the_generated_reference() -> None:
    """Fails when a setting changed without ``chatlog schema settings --output docs/settings.md``."""
    committed = (REPO / schema.REFERENCE).read_text(encoding="utf-8")
    assert committed == schema.settings_reference_text(), f"run {schema.REFERENCE_COMMAND}"


def test_the_reference_names_every_variable_and_no_secret_value() -> None:
    text = schema.settings_reference_text()
    missing = sorted(name for name in known_variables(schema.settings_classes()) if f"`{name}`" not in text)
    assert missing == []
    assert set(DIRECT_VARIABLES) <= {
        line.split("`")[1] for line in text.splitlines() if line.startswith("| `")
    }
    for name in secret_variables(schema.settings_classes()):
        rows = [line for line in text.splitlines() if line.startswith(f"| `{name}` |")]
        assert rows and all(row.split(" | ")[3] == "yes" for row in rows), name


def test_the_command_prints_writes_and_checks(tmp_path: Path) -> None:
    printed = chatlog(["schema", "settings"], {})
    assert printed.code == 0 and printed.stdout == schema.settings_reference_text()
    target = tmp_path / "settings.md"
    stale = chatlog(["schema", "settings", "--output", str(target), "--check"], {})
    assert stale.code == 1 and stale.stderr_lines == [
        f"{target} is out of date: run {schema.REFERENCE_COMMAND}"
    ]
    wrote = chatlog(["schema", "settings", "--output", str(target)], {})
    assert wrote.code == 0 and target.read_text(encoding="utf-8") == printed.stdout
    fresh = chatlog(["schema", "settings", "--output", str(target), "--check"], {})
    assert fresh.code == 0
    assert chatlog(["schema", "settings", "--check"], {}).code == 0  # docs/settings.md of the checkout


def test_an_output_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    run = chatlog(["schema", "settings", "--output", str(tmp_path)], {})  # a directory
    assert run.code == 2
    assert run.stderr == f"chatlog: error: cannot write --output {tmp_path}: Is a directory\n"
