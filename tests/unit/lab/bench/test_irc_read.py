"""The read benchmark's plumbing, small: every line blasted through a real socket arrives once, whole."""

from __future__ import annotations

from lab.bench.irc_read import run_read_bench, twitch_like_corpus


def test_read_bench_delivers_every_non_protocol_line_and_reports_rates() -> None:
    result = run_read_bench(lines=20_000, compare_irc_package=True, irc_package_lines=4_000)
    corpus = twitch_like_corpus()
    chat_per_corpus = sum(1 for line in corpus if not line.startswith("PING"))
    assert result["pool"]["lines"] == 20_000 // len(corpus) * chat_per_corpus
    assert result["pool"]["lines_per_s"] > 0
    assert result["reader_only"]["lines_per_s"] > 0
    assert result["irc_package"]["lines"] >= 4_000
