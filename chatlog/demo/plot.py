"""The PNG of a run: message rates and channel coverage over time, with the events marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def plot_run(
    path: Path,
    *,
    t: Sequence[float],
    series: Mapping[str, Sequence[float]],
    coverage: Mapping[str, Sequence[float]],
    events: Mapping[str, float],
    title: str,
) -> Path:
    """Two panels sharing the time axis: rates (msg/s) on top, coverage (channels) below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5), sharex=True, dpi=80)
    for name, values in series.items():
        top.plot(t, values, label=name, linewidth=1.2)
    top.set_ylabel("messages/s")
    top.legend(loc="upper left", fontsize=8)
    for name, values in coverage.items():
        bottom.plot(t, values, label=name, linewidth=1.2)
    bottom.set_ylabel("channels confirmed")
    bottom.set_xlabel("seconds since start")
    bottom.legend(loc="lower right", fontsize=8)
    for label, at in events.items():
        for ax in (top, bottom):
            ax.axvline(at, color="grey", linestyle="--", linewidth=0.8)
        top.annotate(
            label,
            (at, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize=8,
            rotation=90,
            va="top",
            ha="right",
        )
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
