"""The fleet view of gaps: uncovered channel-seconds and channels with a gap in the last hour."""

from __future__ import annotations

from chatlog.monitor.gaps import GapTally
from chatlog.monitor.heartbeats import HeartbeatReport, ReplicaReport, Uncovered


def _report(now_ms: int, r0: list[str], r1: list[str]) -> HeartbeatReport:
    def rep(replica: int, uncovered: list[str]) -> ReplicaReport:
        return ReplicaReport(
            replica=replica, registered=10, confirmed=10 - len(uncovered), live_workers=1,
            uncovered=[Uncovered(ch, 0, now_ms) for ch in uncovered],
        )  # fmt: skip

    return HeartbeatReport(now_ms=now_ms, registered=10, replicas=[rep(0, r0), rep(1, r1)], since={})


def test_channel_seconds_accumulate_per_group_and_for_all_groups_at_once() -> None:
    tally = GapTally()
    tally.add(_report(0, [], []))
    tally.add(_report(5_000, ["a", "b"], ["b"]))  # 5 s with a, b uncovered in r0; b in r1 (so in all)
    tally.add(_report(7_000, ["a"], []))
    assert dict(tally.channel_seconds) == {"0": 12.0, "1": 5.0, "all": 5.0}
    assert (tally.recent("0"), tally.recent("1"), tally.recent("all")) == (2, 1, 1)


def test_a_gap_older_than_the_window_is_forgotten() -> None:
    tally = GapTally(window_ms=60_000)
    tally.add(_report(0, ["a"], ["a"]))
    tally.add(_report(30_000, [], []))
    assert tally.recent("all") == 1
    tally.add(_report(61_000, [], []))
    assert tally.recent("all") == 0 and tally.recent("0") == 0
    assert tally.channel_seconds["all"] == 0.0  # uncovered only at the first evaluation: no interval yet
