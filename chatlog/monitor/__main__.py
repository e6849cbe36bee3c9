"""``python -m chatlog.monitor``: the monitor command on its own (before it is wired into ``chatlog``)."""

from __future__ import annotations

import sys

import typer

from chatlog.cli.monitor import register
from core.errors import ChatlogError
from core.log_setup import log_to_stderr

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
register(app)

if __name__ == "__main__":
    log_to_stderr()
    try:
        app()
    except ChatlogError as exc:
        print(f"chatlog: error: {exc}", file=sys.stderr)
        sys.exit(2)
