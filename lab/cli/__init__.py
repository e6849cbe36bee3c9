"""The lab's commands on the ``chatlog`` CLI: ``stack``, ``simulate``, ``demo`` and ``bench``, added through
the ``chatlog.commands`` entry point (pyproject.toml), so the operator's CLI never imports the lab."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the lab's commands to the main ``chatlog`` app."""
    from lab.bench import cli as bench
    from lab.cli import demo, simulate, stack

    for module in (stack, simulate, demo, bench):
        module.register(app)
