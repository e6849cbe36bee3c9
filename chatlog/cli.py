"""The one entry point, ``chatlog``."""

from __future__ import annotations

import logging
import os
import sys
import traceback

import typer

from chatlog import redact, settings_env
from chatlog.errors import ChatlogError
from chatlog.schema_cli import app as schema_app
from chatlog.stack.cli import app as stack_app

app = typer.Typer(
    help="chatlog: log IRC chat into Cassandra through Kafka and Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(stack_app, name="stack")
app.add_typer(schema_app, name="schema")


def _register() -> None:
    """Sub-commands that live with their own packages (imported lazily to keep start-up fast)."""
    from chatlog import commands

    commands.register(app)


def main() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    _register()
    secrets: list[str] = []
    try:
        if any(name.upper().startswith(settings_env.PREFIX) for name in os.environ):
            for line in settings_env.check_environment(os.environ):
                print(f"chatlog: warning: {line}", file=sys.stderr)
            secrets = redact.install().secrets
        app()
    except ChatlogError as exc:
        print(f"chatlog: error: {redact.redact(str(exc), secrets)}", file=sys.stderr)
        sys.exit(2)
    except Exception:  # a bug: its traceback, but never a secret's value in it
        print(redact.redact(traceback.format_exc(), secrets), end="", file=sys.stderr)
        sys.exit(1)
