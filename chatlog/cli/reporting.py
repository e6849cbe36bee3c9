"""Where a command's one-line reports go: above its progress bar while one shows, else on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol


class Reports(Protocol):
    """A progress bar that prints a report above itself."""

    def report(self, message: str) -> None: ...


def reporter(bar: Reports | None) -> Callable[[str], None]:
    """``bar.report``, or a print to stderr (flushed: a report is seen as it happens) without a bar."""
    if bar is not None:
        return bar.report

    def to_stderr(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    return to_stderr
