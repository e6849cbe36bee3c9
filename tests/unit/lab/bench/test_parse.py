"""The parse benchmark: its corpus is the promised mix, and the irc-package reference agrees with us."""

from __future__ import annotations

import json
from pathlib import Path

from core.irc_parse import parse_line
from lab.bench.parse import _T0, corpus, irc_parse_line, run


def test_corpus_has_the_promised_mix() -> None:
    lines = corpus()
    events = [parse_line(line, received_at=0) for line in lines]
    kinds = [e.kind if e is not None else None for e in events]
    assert 0.83 < kinds.count("PRIVMSG") / len(lines) < 0.87
    for kind in ("USERNOTICE", "CLEARCHAT", "CLEARMSG", "NOTICE", None):
        assert kinds.count(kind) > 100, kind
    assert sum(1 for e in events if e is not None and e.is_action) > 100
    assert sum(1 for line in lines if not line.isascii()) > 1000


def test_irc_package_reference_builds_the_same_events() -> None:
    for line in corpus(3000):
        assert irc_parse_line(line, received_at=_T0) == parse_line(line, received_at=_T0), line


def test_run_writes_the_result_files(tmp_path: Path) -> None:
    out = tmp_path / "bench_parse.json"
    result = run(lines=2000, repeat=1, out=out)
    assert json.loads(out.read_text()) == result
    assert out.with_suffix(".png").stat().st_size > 1000
    assert set(result["lines_per_s"]) == {"parse", "parse_encode", "irc_framing", "irc_event"}
    assert all(rate > 0 for rate in result["lines_per_s"].values())
    assert result["corpus"]["size"] == 20_000
    assert result["corpus"]["irc_event_equal_to_ours"] == 20_000
    assert result["machine"]["cpu_count"] >= 1
