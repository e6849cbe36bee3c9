"""Result files of the benchmarks and the demo: a JSON document and a matplotlib PNG next to it.

The default place is ``results/`` of the checkout (:data:`RESULTS_DIR`). matplotlib is part of the
optional ``bench`` extra: :func:`figure` imports it only when a plot is drawn, and says in one line how to
install it when it is missing (:mod:`lab.extras`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from core.settings import PROJECT_ROOT
from lab import extras

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RESULTS_DIR: Final = PROJECT_ROOT / "results"


def write_json(path: Path, result: Any, *, indent: int = 2) -> Path:
    """``result`` as indented JSON (UTF-8, a final newline) at ``path``, its directory made if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


@contextmanager
def figure(path: Path, nrows: int = 1, ncols: int = 1, **subplots: Any) -> Iterator[tuple[Figure, Any]]:
    """A figure of ``nrows`` x ``ncols`` axes (``plt.subplots`` arguments), saved to ``path`` as PNG when
    the block ends without an error, and closed either way. Yields (figure, axes)."""
    extras.require_plotting()
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, **subplots)
    try:
        yield fig, axes
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
