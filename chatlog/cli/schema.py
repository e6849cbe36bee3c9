"""``chatlog schema``: the contracts of ``schemas/``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from core.settings import KafkaSettings, load
from schemas import chat_event
from schemas.topics import topic_specs

app = typer.Typer(help="The data contracts in schemas/.", no_args_is_help=True)


def register(main: typer.Typer) -> None:
    """Add ``schema`` to the main app."""
    main.add_typer(app, name="schema")


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
