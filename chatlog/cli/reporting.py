"""Where a command's one-line reports go: above its progress bar while one shows, else on stderr; and the
progress bar of the commands that read lines (:class:`LinesBar`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.progress import TaskID


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


class LinesBar:
    """A rich progress bar on stderr: the ``unit``s done of their total, the lines read and lines/s, the time
    taken, and a description (plain text, never rich markup: a file name like ``[red]x.txt`` is shown as
    it is); one-line reports print above it. ``fit``: the description takes the width left, its start cut."""

    def __init__(self, unit: str, *, fit: bool = False) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.table import Column

        self.progress = Progress(
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TextColumn(f"{unit} {{task.fields[lines]:>11,}} lines {{task.fields[rate]:>9,.0f}} lines/s"),
            TimeElapsedColumn(),
            TextColumn(
                "{task.description}",
                markup=False,
                table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis") if fit else None,
            ),
            console=Console(stderr=True),
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task: TaskID | None = None
        self._lines = 0
        self._started = time.monotonic()

    def report(self, message: str) -> None:
        """A one-line report, printed above the bar."""
        self.progress.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def clock_from_now(self) -> None:
        """Count lines/s from now (the work starts)."""
        self._started = time.monotonic()

    def read(self, lines: int, *, advance: float | None = None, description: str | None = None) -> None:
        """Count ``lines`` more read, and show them and the rate on the task (``advance``d, its
        ``description`` changed, when given)."""
        self._lines += lines
        if self.task is not None:
            rate = self._lines / max(time.monotonic() - self._started, 1e-9)
            self.progress.update(
                self.task, advance=advance, description=description, lines=self._lines, rate=rate
            )
