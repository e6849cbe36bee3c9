"""The optional ``bench`` extra (matplotlib for plots, psutil for CPU accounting): whether it is installed,
and the one line that says how to install it when it is not.

The benchmarks and the demo check it before they start their work, so a missing extra costs a second, not
a run, and shows as ``chatlog: error: ...`` rather than an ImportError's traceback.
"""

from __future__ import annotations

import importlib.util
from typing import Final

from core.errors import ChatlogError

INSTALL: Final = "pip install -e '.[bench]'"


class MissingExtra(ChatlogError):
    """A module of the ``bench`` extra is not installed."""


def require(purpose: str, *modules: str) -> None:
    """Raise :class:`MissingExtra` (one line) unless every one of ``modules`` can be imported."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(f"{purpose} needs the bench extra (no {', '.join(missing)} here): {INSTALL}")


def has(module: str) -> bool:
    """Whether ``module`` (of the extra) can be imported."""
    return importlib.util.find_spec(module) is not None


def require_plotting() -> None:
    require("plotting", "matplotlib")


def require_cpu_accounting() -> None:
    require("CPU accounting", "psutil")
