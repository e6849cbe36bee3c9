"""``chatlog sink``: the streaming sink, or a bounded backfill (``--backfill --from T``).

The command is defined once, in sink/driver/job.py (also the entry file of ``spark-submit``); this
module only registers it.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add ``sink`` to ``app``."""
    from sink.driver import job

    app.command("sink")(job.command)
