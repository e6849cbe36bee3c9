"""The one entry point, ``chatlog``.

Every command lives in a module of this package named after it, each with ``register(app)``; packages
above this one (the lab: the local stack, the simulator, the demo, the benchmarks) add theirs through
the ``chatlog.commands`` entry point group.
"""

from __future__ import annotations

import os
import sys
import traceback

import typer

from chatlog.cli import (
    coverage,
    erase,
    fill,
    import_,
    ingest,
    init,
    logs,
    monitor,
    names,
    optout,
    pack,
    schema,
    serve,
    sink,
    smoke,
)
from core import redact, settings_env
from core.errors import ChatlogError
from core.log_setup import log_to_stderr

app = typer.Typer(
    help="chatlog: log IRC chat into Cassandra through Kafka and Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
COMMANDS = (
    schema,
    init,
    ingest,
    import_,
    sink,
    logs,
    coverage,
    fill,
    names,
    optout,
    erase,
    pack,
    serve,
    monitor,
    smoke,
)
PLUGIN_GROUP = "chatlog.commands"


def _register() -> None:
    """Every command of this package, then those of the installed plugins (the lab's)."""
    from importlib.metadata import entry_points

    for module in COMMANDS:
        module.register(app)
    for plugin in entry_points(group=PLUGIN_GROUP):
        try:
            register = plugin.load()
        except ModuleNotFoundError:  # declared by the package metadata, left out of this install
            continue
        register(app)


def main() -> None:
    log_to_stderr()
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
