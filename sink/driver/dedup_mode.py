"""Which deduplication a streaming query runs: the one its checkpoint started with.

Spark refuses to restart a checkpoint whose stateful operators changed
(``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``), and the two modes of ``sink_dedup`` differ
in exactly that: ``spark`` has a deduplication operator and its state, ``writer`` has none. So a local
checkpoint that has committed batches keeps its mode, whatever the setting says (with a warning); a
remote one (``hdfs://``, ``s3a://``...) is not looked into, and a mismatch fails in one line
(:func:`mismatch_message`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sink.driver.session import local_checkpoint

if TYPE_CHECKING:
    from sink.settings import SinkSettings

log = logging.getLogger(__name__)
Mode = Literal["writer", "spark"]
MISMATCH = "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"


def _local_path(location: str) -> Path:
    return Path(location.removeprefix("file://").removeprefix("file:"))


def checkpoint_mode(location: str) -> Mode | None:
    """The mode a local checkpoint started with: ``spark`` when it holds dedup state, ``writer`` when it
    committed batches without any; None when it committed none or is not local."""
    if not local_checkpoint(location):
        return None
    root = _local_path(location)
    if (root / "state").is_dir():
        return "spark"
    commits = root / "commits"
    if commits.is_dir() and any(not p.name.startswith(".") for p in commits.iterdir()):
        return "writer"
    return None


def effective_mode(settings: SinkSettings) -> Mode:
    """``sink_dedup``, unless the checkpoint started with the other mode: then that one, with a warning."""
    found = checkpoint_mode(settings.checkpoint_location)
    if found is None or found == settings.sink_dedup:
        return settings.sink_dedup
    log.warning(
        "checkpoint %s was started with sink_dedup=%s: keeping it (CHATLOG_SINK_DEDUP=%s applies to a new "
        "checkpoint, CHATLOG_SINK_CHECKPOINT)",
        settings.checkpoint_location,
        found,
        settings.sink_dedup,
    )
    return found


def mismatch_message(text: str, settings: SinkSettings) -> str | None:
    """One line for Spark's refusal of a checkpoint started with the other mode; None for other errors."""
    if MISMATCH not in text:
        return None
    return (
        f"checkpoint {settings.checkpoint_location} was started with the other dedup mode than "
        f"CHATLOG_SINK_DEDUP={settings.sink_dedup}: set it back, or start a new checkpoint "
        "(CHATLOG_SINK_CHECKPOINT)"
    )
