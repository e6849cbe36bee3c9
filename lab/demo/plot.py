"""The PNG of a run: message rates, channel coverage and end-to-end latency over time, events marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from lab.results import figure


def plot_run(
    path: Path,
    *,
    t: Sequence[float],
    series: Mapping[str, Sequence[float]],
    coverage: Mapping[str, Sequence[float]],
    events: Mapping[str, float],
    title: str,
    latency: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    batches: Sequence[tuple[float, float, int]] = (),
) -> Path:
    """Panels sharing the time axis: rates (msg/s) on top, coverage (channels), with ``latency``
    (name -> (send times, seconds)) IRC send -> row readable, and with ``batches`` ((start, duration,
    records) of the sink's micro-batches) one bar per batch, as wide as it took, at the bottom."""
    with_latency = bool(latency) and any(len(ts) for ts, _v in (latency or {}).values())
    rows = 2 + int(with_latency) + int(bool(batches))
    with figure(path, rows, 1, figsize=(8, 2.5 * rows), sharex=True, dpi=80) as (fig, axes):
        top, middle = axes[0], axes[1]
        for name, values in series.items():
            top.plot(t, values, label=name, linewidth=1.2)
        top.set_ylabel("messages/s")
        top.legend(loc="upper left", fontsize=8)
        for name, values in coverage.items():
            middle.plot(t, values, label=name, linewidth=1.2)
        middle.set_ylabel("channels confirmed")
        middle.legend(loc="lower right", fontsize=8)
        if with_latency and latency is not None:
            bottom = axes[2]
            for name, (ts, values) in latency.items():
                bottom.plot(ts, values, label=name, linewidth=1.2, marker=".", markersize=3)
            bottom.set_ylabel("IRC send → readable (s)")
            bottom.set_ylim(bottom=0)
            bottom.legend(
                loc="upper left", fontsize=8, title="sampled, per 5 s of send time", title_fontsize=7
            )
        if batches:
            panel = axes[-1]
            panel.bar(
                [start for start, _d, _n in batches],
                [n for _s, _d, n in batches],
                width=[max(d, 0.05) for _s, d, _n in batches],
                align="edge",
                color="tab:purple",
                alpha=0.7,
            )
            panel.set_ylabel("sink batch (records)")
        axes[-1].set_xlabel("seconds since start")
        for label, at in events.items():
            for ax in axes:
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
        fig.suptitle(title, fontsize=8, wrap=True)
    return path
