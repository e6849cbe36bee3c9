"""The fleet's gaps per replica group and for all groups (pure part of ``chatlog status``'s section)."""

from __future__ import annotations

import pytest

from core.coverage_spans import Gap, Span
from serve.fleet_gaps import ALL, FleetGaps, GroupGaps, fleet_gaps, report_json, report_text

HOUR = 3_600_000
NOW = 10 * HOUR
SINCE = NOW - HOUR


def _by_label(groups: list[GroupGaps]) -> dict[str, dict[str, float]]:
    return {g.label: {c.channel: c.seconds for c in g.channels} for g in groups}


def test_each_group_and_all_groups_have_their_own_gaps() -> None:
    known = {
        "both": [Span(0, "a", 0, NOW, "open"), Span(1, "x", 0, NOW, "open")],
        "r0_hole": [
            Span(0, "a", 0, SINCE + 60_000, "lost"),
            Span(0, "b", SINCE + 360_000, NOW, "open"),
            Span(1, "x", 0, NOW, "open"),
        ],
        "r0_only": [Span(0, "a", 0, NOW, "open")],
        "gone": [Span(0, "a", 0, SINCE - HOUR, "stopped")],
        "new": [Span(0, "a", NOW - 60_000, NOW, "open"), Span(1, "x", NOW - 30_000, NOW, "open")],
        "empty": [],
    }
    groups = fleet_gaps(known, since_ms=SINCE, until_ms=NOW)
    assert [g.label for g in groups] == ["0", "1", ALL]
    assert _by_label(groups) == {
        "0": {"gone": 3600.0, "r0_hole": 300.0},
        "1": {"gone": 3600.0, "r0_only": 3600.0, "new": 30.0},
        ALL: {"gone": 3600.0},
    }
    assert groups[0].uncovered_s == pytest.approx(3900)
    assert groups[0].channels[1].gaps == [Gap(SINCE + 60_000, SINCE + 360_000, "r0 a: lost")]


def test_groups_asked_for_are_reported_even_without_spans() -> None:
    known = {"c": [Span(0, "a", 0, NOW, "open")]}
    groups = fleet_gaps(known, since_ms=SINCE, until_ms=NOW, replicas=[0, 2])
    assert _by_label(groups) == {"0": {}, "2": {"c": 3600.0}, ALL: {}}
    old = {"c": [Span(0, "a", 0, NOW, "open"), Span(3, "z", 0, SINCE - 1, "stopped")]}
    assert [g.label for g in fleet_gaps(old, since_ms=SINCE, until_ms=NOW)] == ["0", ALL]


def test_the_text_and_json_sections() -> None:
    known = {f"c{i}": [Span(0, "a", 0, SINCE + i * 1000, "silent")] for i in range(8)}
    fleet = FleetGaps(SINCE, NOW, 9, fleet_gaps(known, since_ms=SINCE, until_ms=NOW), 0.25)
    lines = report_text(fleet, show=2).splitlines()
    assert lines[0] == "gaps in the last hour (coverage ledger, 9 channel(s) read in 0.25 s):"
    assert lines[1] == (
        "  replica 0: 8 channel(s) with a gap, 28772 uncovered channel-seconds: "
        "c0 3600 s (r0 a: silent), c1 3599 s (r0 a: silent) ... and 6 more"
    )
    assert lines[2].startswith("  all replicas: 8 channel(s)")
    doc = report_json(fleet)
    assert doc["channels"] == 9
    groups = doc["groups"]
    assert isinstance(groups, list) and groups[0]["channels_with_gap"] == 8
    assert groups[0]["channels"][7] == {
        "channel": "c7",
        "seconds": 3593.0,
        "gaps": [{"start": SINCE + 7000, "end": NOW, "why": "r0 a: silent"}],
    }
    quiet = FleetGaps(SINCE, NOW, 1, fleet_gaps({}, since_ms=SINCE, until_ms=NOW, replicas=[0]), 0.0)
    assert report_text(quiet).splitlines()[1:] == ["  replica 0: no gap", "  all replicas: no gap"]
