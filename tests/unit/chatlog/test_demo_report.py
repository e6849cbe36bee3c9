from __future__ import annotations

from chatlog.demo.report import CoverageSample, RunReport, covered_at, lost_tokens, max_gap_s, recovery_s


def cov(t: float, **replicas: set[str]) -> CoverageSample:
    return CoverageSample(t, {int(k[1:]): frozenset(v) for k, v in replicas.items()})


def test_no_gap_when_the_other_replica_covers() -> None:
    samples = [cov(0, r0={"a", "b"}, r1={"a", "b"}), cov(1, r0={"a"}, r1={"a", "b"}), cov(2, r0={"a", "b"})]
    assert max_gap_s(samples, {"a", "b"}) == 0.0


def test_gap_runs_from_first_miss_to_next_cover() -> None:
    samples = [cov(0, r0={"a", "b"}), cov(1, r0={"a"}), cov(2.5, r0={"a"}), cov(4, r0={"a", "b"})]
    assert max_gap_s(samples, {"a", "b"}) == 3.0


def test_open_gap_counts_to_the_last_sample_and_since_skips_warmup() -> None:
    samples = [cov(0, r0=set()), cov(5, r0={"a"}), cov(6, r0=set()), cov(9, r0=set())]
    assert max_gap_s(samples, {"a"}) == 5.0
    assert max_gap_s(samples, {"a"}, since=5) == 3.0


def test_recovery_is_time_to_full_coverage_of_that_replica() -> None:
    samples = [cov(10, r0={"a"}, r1={"a", "b"}), cov(12, r0={"a"}, r1={"a", "b"}), cov(14.5, r0={"a", "b"})]
    assert recovery_s(samples, {"a", "b"}, replica=0, after=9.0) == 5.5
    assert recovery_s(samples, {"a", "b", "c"}, replica=0, after=9.0) is None


def test_report_line_and_lost() -> None:
    assert lost_tokens(["x", "y", "z"], ["y"]) == {"x", "z"}
    line = RunReport(3, 2, 1, 4, 0.0, 2.25).line()
    assert line == "sent=3 stored=2 lost=1 duplicates_removed=4 max_gap_s=0.0 recovery_s=2.2"


def test_covered_at_needs_the_logger_to_outlive_the_grace_period() -> None:
    samples = [
        cov(0, r0={"a"}),
        cov(1, r0={"a"}),
        cov(2, r0={"a"}),
        cov(3, r0=set()),
        cov(4, r0={"a"}),
        cov(5, r0={"a"}),
        cov(6, r0={"a"}),
        cov(7, r0={"a"}),
    ]
    assert covered_at(samples, "a", 0.5, grace=1.0)
    assert not covered_at(samples, "a", 1.5, grace=1.0)  # the logger died before it could ack
    assert not covered_at(samples, "a", 3.5, grace=1.0)
    assert covered_at(samples, "a", 4.5, grace=1.0)
    assert not covered_at(samples, "a", 6.5, grace=1.0)  # no sample after the grace period yet
    assert not covered_at(samples, "b", 0.5, grace=1.0)
