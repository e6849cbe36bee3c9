"""Commands of this package, registered on the main ``chatlog`` app by chatlog.commands."""

from __future__ import annotations

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this package's commands to ``app`` and its benchmarks to ``bench``."""
    del app, bench
