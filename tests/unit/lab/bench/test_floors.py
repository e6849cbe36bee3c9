"""The pacing, rows and windows of the floors at a step's rate (lab/bench/floors.py)."""

from __future__ import annotations

import itertools
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from lab.bench.floors import (
    BATCH_BYTES,
    BATCH_PARTITIONS,
    BATCH_ROWS,
    PROBE_LOOKBACK_MS,
    Windows,
    Written,
    batched,
    paced,
    rounds_of,
    serve_polls,
    with_index_rows,
)


def test_paced_sends_each_index_once_in_order_and_never_ahead_of_the_rate() -> None:
    start = time.monotonic()
    calls: list[tuple[int, float]] = []
    sent = paced(200.0, 0.5, lambda i: calls.append((i, time.monotonic() - start)))
    assert sent == 100
    assert [i for i, _ in calls] == list(range(100))
    assert all(at >= i / 200.0 - 0.005 for i, at in calls)  # the i-th goes no sooner than i / rate


def test_a_slow_send_is_caught_up_so_the_count_is_the_rate_times_the_time() -> None:
    def slow(i: int) -> None:
        if i == 0:
            time.sleep(0.2)

    assert paced(100.0, 0.4, slow) == 40


def _row(table: str, key: str, at: float, frame_bytes: int = 10) -> Written:
    cells: tuple[object, ...] = (key, 1, 0) if table == "channel_blocks" else (key, "u", 202611, 0)
    return Written(table, (*cells, at, None, None, 1, b"x" * frame_bytes), at)


def test_rounds_are_the_rows_of_the_window_cut_where_nothing_was_written_for_the_gap() -> None:
    rows = [_row("channel_blocks", "c", at) for at in (0.0, 0.2, 0.5, 10.0, 10.3, 20.1, 30.0)]
    rounds = rounds_of(rows, 0.1, 30.0, gap_s=5.0)
    assert [[r.at for r in each] for each in rounds] == [[0.2, 0.5], [10.0, 10.3], [20.1]]
    assert rounds_of(rows, 40.0, 50.0, gap_s=5.0) == []


def test_batches_hold_every_row_once_grouped_by_partition_within_the_sinks_cuts() -> None:
    rows = [_row("user_blocks", f"c{i % 70}", i) for i in range(250)]
    rows += [_row("channel_blocks", "big", 300.0 + i, frame_bytes=20_000) for i in range(5)]
    batches = batched(rows)
    assert sorted(id(r) for b in batches for r in b) == sorted(id(r) for r in rows)
    assert all(len(b) <= BATCH_ROWS for b in batches)
    assert all(len({r.partition for r in b}) <= BATCH_PARTITIONS for b in batches)
    assert all(sum(len(r.cells[-1]) for r in b) <= BATCH_BYTES or len(b) == 1 for b in batches)
    # a partition's rows are next to each other: each partition spans at most the batches it must
    spans = {
        p: {i for i, b in enumerate(batches) for r in b if r.partition == p}
        for p in {r.partition for r in rows}
    }
    assert all(max(s) - min(s) == len(s) - 1 for s in spans.values())
    assert len(batches) < len(rows) / 10


def test_each_block_row_is_followed_by_its_index_rows_once_per_refresh() -> None:
    rows = [
        _row("channel_blocks", "c", 0.0),
        _row("user_blocks", "c", 0.5),
        _row("channel_blocks", "c", 1.0),  # the same day and part: its index row is fresh
        _row("user_blocks", "c", 400.0),  # past the refresh: written again
    ]
    out = with_index_rows(rows, refresh_s=300.0)
    assert [(w.table, w.cells, w.at) for w in out if w.table not in ("channel_blocks", "user_blocks")] == [
        ("channel_days", ("c", 1, 0), 0.0),
        ("user_months", ("c", "u", 202611, 0), 0.5),
        ("channel_users", ("c", "u"), 0.5),
        ("user_months", ("c", "u", 202611, 0), 400.0),
        ("channel_users", ("c", "u"), 400.0),
    ]
    assert [w for w in out if w.table in ("channel_blocks", "user_blocks")] == rows  # in order, each once
    assert out.index(rows[1]) < out.index(Written("user_months", ("c", "u", 202611, 0), 0.5))


def test_index_rows_are_batched_by_their_own_partitions() -> None:
    rows = with_index_rows([_row("user_blocks", f"c{i % 7}", float(i)) for i in range(40)])
    batches = batched(rows)
    assert sorted(id(r) for b in batches for r in b) == sorted(id(r) for r in rows)
    assert {r.partition for r in rows if r.table == "channel_users"} == {
        ("channel_users", f"c{i}") for i in range(7)
    }
    assert all(len({r.partition for r in b}) <= BATCH_PARTITIONS for b in batches)


def test_a_floor_is_its_median_window_so_one_burst_of_earlier_work_does_not_move_it() -> None:
    quiet = Windows((0.010, 0.011, 0.060, 0.012), window_s=10.0)  # a compaction in the third window
    assert quiet.median == 0.0115
    assert quiet.us_per(100.0) == 115.0
    assert Windows((), 10.0).median == 0.0


def test_the_probes_polls_are_asked_again_for_each_channel_within_the_steps_window() -> None:
    asked: list[tuple[str, dict[str, list[str]]]] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            asked.append((url.path, parse_qs(url.query)))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        lo, hi = 1_700_000_000.0, 1_700_000_000.3  # a window shorter than the polls: it is swept again
        polls = serve_polls(f"http://127.0.0.1:{server.server_address[1]}", ["a", "b"], lo, hi, every_s=0.05)
        stop = threading.Event()
        threading.Timer(0.6, stop.set).start()
        polls(stop)
    finally:
        server.shutdown()
    assert len(asked) >= 12
    assert {path for path, _ in asked} == {"/api/v2/recent-messages/a", "/api/v2/recent-messages/b"}
    befores = [int(q["before"][0]) for _, q in asked]
    assert all(int(lo * 1000) <= b < int(hi * 1000) for b in befores)
    assert all(int(q["after"][0]) == int(q["before"][0]) - PROBE_LOOKBACK_MS for _, q in asked)
    assert any(later < earlier for earlier, later in itertools.pairwise(befores))  # swept from lo again
