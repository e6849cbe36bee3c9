"""``chatlog sink``: the streaming sink, or a bounded backfill (``--backfill --from T``).

The command is defined once, in sink/job/command.py (also the entry file of ``spark-submit``); this
module only registers it.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add ``sink`` to ``app``."""
    from sink.job import command

    app.command("sink")(command.command)
