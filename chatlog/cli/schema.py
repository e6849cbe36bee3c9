"""``chatlog schema``: the contracts: the chat event of ``schemas/``, the topics, and the settings.

This module is also the catalog of the settings modules (:data:`SETTINGS_MODULES`): the base layer
cannot know the packages above it, so the operator layer imports every settings module here. Importing
them registers their classes (:data:`core.settings.SETTINGS_CLASSES`), which is what the command line's
check of unknown ``CHATLOG_*`` variables and its masking of secrets read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Final

import typer
from pydantic_settings import BaseSettings

import chatlog.monitor.settings
import consent.settings
import core.settings
import ingest.irc.settings
import ingest.settings
import serve.settings
import sink.settings
from chatlog.cli.generated import write_or_check
from core import settings_reference
from core.settings import KafkaSettings, load
from core.settings_env import DIRECT_VARIABLES
from schemas import chat_event
from schemas.topics import topic_specs

SETTINGS_MODULES: Final[tuple[ModuleType, ...]] = (
    core.settings,
    consent.settings,
    ingest.irc.settings,
    ingest.settings,
    sink.settings,
    serve.settings,
    chatlog.monitor.settings,
)
"""Every settings module of the project, in the order of the reference (a test checks none is missing)."""

REFERENCE: Final = Path("docs/settings.md")
REFERENCE_COMMAND: Final = f"chatlog schema settings --output {REFERENCE}"

app = typer.Typer(help="The data contracts in schemas/ and the settings reference.", no_args_is_help=True)


def register(main: typer.Typer) -> None:
    """Add ``schema`` to the main app."""
    main.add_typer(app, name="schema")


def settings_classes() -> list[type[BaseSettings]]:
    """The settings classes of :data:`SETTINGS_MODULES`, module by module, in definition order."""
    names = [module.__name__ for module in SETTINGS_MODULES]
    registered = [cls for cls in core.settings.SETTINGS_CLASSES if cls.__module__ in names]
    return sorted(registered, key=lambda cls: names.index(cls.__module__))


def settings_reference_text() -> str:
    """``docs/settings.md`` as the classes define it now."""
    return settings_reference.render(settings_classes(), DIRECT_VARIABLES, command=REFERENCE_COMMAND)


@app.command()
def export() -> None:
    """Regenerate schemas/chat_event.schema.json from the model."""
    path = Path(chat_event.__file__).with_name("chat_event.schema.json")
    path.write_text(json.dumps(chat_event.json_schema(), indent=2, sort_keys=True) + "\n")
    typer.echo(f"wrote {path}")


@app.command()
def topics() -> None:
    """The topics as they will be created with the current settings."""
    for spec in topic_specs(load(KafkaSettings)):
        typer.echo(f"{spec.name}\tpartitions={spec.partitions}\t{spec.config}")


@app.command()
def settings(
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the reference to this file (docs/settings.md)."),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check", help="Do not write: exit 1 when the file (default docs/settings.md) is out of date."
        ),
    ] = False,
) -> None:
    """The settings reference: every CHATLOG_* variable of every settings class, in Markdown."""
    text = settings_reference_text()
    if output is None and not check:
        sys.stdout.write(text)
        return
    write_or_check(output or REFERENCE, text, check=check, command=REFERENCE_COMMAND)
