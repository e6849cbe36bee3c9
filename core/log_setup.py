"""How a chatlog process logs: one line per record on stderr, time, level and logger first."""

from __future__ import annotations

import logging
import sys
from typing import Final

LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_to_stderr(level: int = logging.INFO) -> None:
    """The root logger writes :data:`LOG_FORMAT` lines at ``level`` and above to stderr."""
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
