from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from lab.demo.e2e import SAMPLE_RANKS, SentTail, Watch, poll_interval_s, sample_channels
from lab.demo.machine import busy_at, busy_s, cpu_us_per_msg
from lab.demo.report import (
    CopyTimes,
    CoverageSample,
    RunReport,
    Spread,
    batch_summary,
    binned_quantiles,
    covered_at,
    late_copies,
    lost_tokens,
    max_gap_s,
    quantile,
    recovery_s,
    sink_batches,
    sink_log_totals,
)
from lab.demo.verify import stored_key, text_of_stored, token_of
from lab.simulator import ChatSimulator, SentMessage, hotness_order
from sink.job.progress import BatchReport
from sink.writer.stats import WriteStats


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
    assert line == (
        "sent=3 stored=2 lost=1 duplicates_removed=4 max_gap_s=0.0 recovery_s=2.2 late_copies=n/a "
        "api_e2e_p50_s=n/a api_e2e_p99_s=n/a write_lag_p99_s=n/a skew_p50_s=n/a skew_p99_s=n/a "
        "skew_p999_s=n/a skew_max_s=n/a pipeline_us_per_msg=n/a cpu_us_per_msg=n/a"
    )
    full = RunReport(
        3,
        3,
        0,
        3,
        0.0,
        None,
        late_copies=0,
        e2e=Spread(100, 0.614, 1.5, 1.9, 2.0),
        skew=Spread(3, 2.0, 40.0, 1250.0, 1250.0),
        cpu_us_per_msg=1023.4,
        write_lag_p99_s=10.456,
        pipeline_us_per_msg=311.6,
    ).line()
    assert full.endswith(
        "recovery_s=n/a late_copies=0 api_e2e_p50_s=0.61 api_e2e_p99_s=1.50 write_lag_p99_s=10.46 "
        "skew_p50_s=0.002 skew_p99_s=0.040 skew_p999_s=1.250 skew_max_s=1.250 pipeline_us_per_msg=312 "
        "cpu_us_per_msg=1023"
    )


def test_quantiles_are_nearest_rank() -> None:
    values = list(range(1, 1001))  # 1..1000
    assert [quantile(values, q) for q in (0.5, 0.99, 0.999, 1.0)] == [500.0, 990.0, 999.0, 1000.0]
    assert quantile([7], 0.999) == 7.0
    assert quantile([1, 2, 3], 0.5) == 2.0
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)
    assert Spread.of([]) is None
    spread = Spread.of([5, 1, 3, 2, 4])
    assert spread == Spread(n=5, p50=3.0, p99=5.0, p999=5.0, max=5.0)


def test_copy_skew_is_the_spread_of_each_repeated_ids_timestamps() -> None:
    copies = CopyTimes()
    copies.add("a", 1000, 990, 1000)  # two replica groups, 4 ms apart in Kafka
    copies.add("a", 1004, 1001, 1004)
    copies.add("b", 2000, 1995, 2000)  # once only: no skew
    copies.add("c", 3050, 3040, 3050)  # three copies (a hand-off overlap too), out of order
    copies.add("c", 3000, 2990, 3050)  # created early, appended after a record of 3050
    copies.add("c", 3020, 3015, 3060)
    assert sorted(copies.kafka_skews_ms()) == [4, 50]
    assert sorted(copies.received_skews_ms()) == [11, 50]
    assert sorted(copies.append_skews_ms()) == [4, 10]
    assert (copies.records, copies.distinct) == (6, 3)
    assert copies.copies_histogram() == {1: 1, 2: 1, 3: 1}
    assert Spread.of(copies.kafka_skews_ms()) == Spread(2, 4.0, 50.0, 50.0, 50.0)


def test_late_copies_is_what_the_dedup_let_through_beyond_one_per_id() -> None:
    assert late_copies(events_written=1000, dead_letters=0, distinct_ids=1000) == 0
    assert late_copies(events_written=1003, dead_letters=0, distinct_ids=1000) == 3
    assert late_copies(events_written=995, dead_letters=5, distinct_ids=1000) == 0  # 5 were invalid
    assert late_copies(events_written=990, dead_letters=0, distinct_ids=1000) == -10  # ids never written


def test_sink_log_totals_read_the_sinks_own_batch_lines() -> None:
    lines = []
    for batch_id, events, dead in ((1, 1, 0), (2, 1040, 10), (3, 7, 0)):
        stats = WriteStats(events=events, rows=Counter({"chat_by_channel": events}), deadletters=dead)
        progress = {"batchId": batch_id, "numInputRows": events + dead, "batchDuration": 500}
        lines.append(
            "2026-01-01 12:00:00 INFO sink.job.progress " + BatchReport.from_progress(progress, stats).line()
        )
    lines.append("2026-01-01 12:00:01 INFO sink started: batch 4 is not a batch line")
    assert sink_log_totals("\n".join(lines)) == (1048, 10)


def test_binned_quantiles_per_bin_of_send_time() -> None:
    points = [(0.5, 1.0), (1.0, 3.0), (4.9, 2.0), (12.0, 9.0)]
    mids, qs = binned_quantiles(points, 5.0, (0.5, 0.99))
    assert mids == [2.5, 12.5]
    assert qs == {0.5: [2.0, 9.0], 0.99: [3.0, 9.0]}


def test_the_probe_samples_by_the_simulators_own_hotness_order() -> None:
    channels = [f"C{i}" for i in range(500)]
    sim = ChatSimulator("127.0.0.1", 1, channels, rate=1.0, seed=3)
    lower = [c.lower() for c in channels]
    assert sim._order == hotness_order(lower, random.Random(3))
    picked = sample_channels(channels, seed=3)
    assert picked == [sim._order[r] for r in SAMPLE_RANKS]
    assert sample_channels(["a", "b"], seed=0) == hotness_order(["a", "b"], random.Random(0))


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


def test_the_probe_looks_for_each_missing_row_until_it_is_read() -> None:
    watch = Watch(["a", "b"], start_ms=10_000, margin_ms=1000, give_up_ms=60_000)
    # nothing recorded yet: rows from a margin before the start
    assert watch.since_ms("a") == 9_000 and watch.lag_ms(10_500) == 0
    watch.saw("a", "t3", 12_400)  # read before the simulator's file listed it
    watch.sent(
        [SentMessage("a", "t1", 11_000), SentMessage("a", "t2", 11_500), SentMessage("a", "t3", 12_000)]
    )
    watch.sent([SentMessage("c", "t4", 12_300)])  # not a sample channel: only moves the horizon
    assert watch.pending == {"a": {"t1": 11_000, "t2": 11_500}, "b": {}}
    assert watch.since_ms("a") == 10_000  # the oldest missing row of a
    assert watch.since_ms("b") == 11_300  # nothing missing in b: what the simulator has not listed yet
    assert watch.lag_ms(13_000) == 2_000
    watch.saw("a", "t1", 13_100)
    assert watch.since_ms("a") == 10_500
    assert watch.seen == {"t3": 12_400, "t1": 13_100}
    watch.expire(71_600)  # t2 is 60.1 s old: given up
    assert watch.pending["a"] == {} and watch.given_up == 1


def test_poll_interval_grows_with_the_lag_within_bounds() -> None:
    assert poll_interval_s(0, 0.1) == 0.1
    assert poll_interval_s(1_000, 0.1) == 0.1
    assert poll_interval_s(10_000, 0.1) == 0.5
    assert poll_interval_s(600_000, 0.1) == 2.0


def test_sent_tail_reads_only_complete_new_lines(tmp_path: Path) -> None:
    path = tmp_path / "sent.ndjson"
    tail = SentTail(path)
    assert tail.read() == []
    line = json.dumps({"c": "a", "t": "sim-1", "ts": 5}) + "\n"
    path.write_text(line + '{"c": "a", "t": "sim-')
    assert tail.read() == [SentMessage("a", "sim-1", 5)]
    with path.open("a") as fh:
        fh.write('2", "ts": 6}\n')
    assert tail.read() == [SentMessage("a", "sim-2", 6)]
    assert tail.read() == []


def test_the_token_is_read_from_the_stored_line_of_each_kind_of_row() -> None:
    from core.irc_parse import parse_line
    from store.keys import message_uuid
    from store.stored_line import strip

    irc = "@msgid=Ab1;time=2026-11-01T00:00:00.123Z :bob!bob@irc.local PRIVMSG #d1_2 :d1-000042 tail words"
    event = parse_line(irc, received_at=1_793_491_200_200)
    assert event is not None
    stored = strip(event.raw, message_uuid(event.message_id), event.sent_at)
    assert token_of(text_of_stored(stored)) == "d1-000042"
    twitch = "@id=0f6f4b4e-5a4c-4c1e-9d3b-6a1f2e3d4c5b;tmi-sent-ts=1793491200123 :u!u@u PRIVMSG #c :tok rest"
    stripped = strip(twitch, "0f6f4b4e-5a4c-4c1e-9d3b-6a1f2e3d4c5b", 1_793_491_200_123)
    assert stripped != twitch and text_of_stored(stripped) == "tok rest"
    verbatim = strip("@id=;x=1 :u!u@u PRIVMSG #c :kept as is", "0f6f4b4e-5a4c-4c1e-9d3b-6a1f2e3d4c5b", 1)
    assert verbatim.startswith("!") and text_of_stored(verbatim) == "kept as is"
    assert text_of_stored(":irc.local 001 bob :Welcome") is None  # not chat
    assert text_of_stored("@a=b") is None and text_of_stored(None) is None  # malformed, no line
    assert stored_key("d1_2") == stored_key("#D1_2") == "login:d1_2"


def test_sink_batches_from_the_log_with_the_idle_time_between_them() -> None:
    log = "\n".join(
        [
            "2026-11-26 23:00:00,100 INFO sink: sink started",
            "2026-11-26 23:00:02,000 INFO sink.job.progress: batch 3: 500 in (0 invalid), 250 duplicates "
            "dropped, 250 events -> 750 rows, 0 dead letters, 1.50s, lag 0, started 2026-11-26T23:00:00.000Z",
            "2026-11-26 23:00:09,000 INFO sink.job.progress: batch 5: 40 in (1 invalid), 0 duplicates "
            "dropped, 39 events -> 117 rows, 1 dead letters, 0.25s, lag 12, started 2026-11-26T23:00:05.000Z",
            "batch 6: 1 in (0 invalid), 0 duplicates dropped, 1 events -> 3 rows, 0 dead letters, 1s, lag ?",
        ]
    )
    first, second = sink_batches(log)  # a line without its start (an older sink) is not a batch here
    assert (first.batch_id, first.records, first.duration_s, first.idle_before_s) == (3, 500, 1.5, None)
    assert (second.batch_id, second.records, second.duration_s) == (5, 40, 0.25)
    assert second.idle_before_s == pytest.approx(3.5)  # 23:00:01.5 -> 23:00:05
    assert second.started - first.started == pytest.approx(5.0)
    summary = batch_summary([first, second], t0=first.started)
    assert summary["count"] == 2 and summary["records_mean"] == 270.0
    assert summary["batches"][1]["start_s"] == 5.0 and summary["idle_total_s"] == 3.5


def test_cpu_per_message_between_two_times() -> None:
    samples = [(100.0, 10.0), (101.0, 11.5), (103.0, 15.5)]
    assert busy_at(samples, 102.0) == pytest.approx(13.5)
    assert busy_at(samples, 99.0) is None and busy_at(samples, 104.0) is None
    assert cpu_us_per_msg(samples, 100.0, 103.0, 5_000) == pytest.approx(1_100.0)  # 5.5 s / 5,000
    assert cpu_us_per_msg(samples, 100.0, 103.0, 0) is None
    assert busy_s() > 0


def test_the_demo_reads_the_batch_line_the_sink_writes() -> None:
    from sink.job.progress import BatchReport

    progress = {
        "batchId": 7,
        "numInputRows": 12,
        "batchDuration": 1250,
        "timestamp": "2026-11-26T23:00:00.000Z",
    }
    (batch,) = sink_batches(BatchReport.from_progress(progress, None).line())
    assert (batch.batch_id, batch.records, batch.duration_s) == (7, 12, 1.25)
