"""The demo's Supervisor counts the starts of each process (a restarted sink's counters are partial)."""

from __future__ import annotations

from pathlib import Path

from lab.demo.supervisor import Supervisor


def test_each_start_of_a_name_is_counted(tmp_path: Path) -> None:
    with Supervisor(tmp_path) as sup:
        sup.start("once", ["--help"]).proc.wait(60)
        for _ in range(2):
            sup.start("twice", ["--help"]).proc.wait(60)
        assert sup.starts == {"once": 1, "twice": 2}
        assert "Usage" in (tmp_path / "twice.log").read_text()
