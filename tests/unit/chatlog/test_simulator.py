"""What ``chatlog simulate --out`` records reads back as it was sent (the demo and the tests rely on it)."""

from __future__ import annotations

from pathlib import Path

from chatlog.simulator import SentMessage, read_sent


def test_sent_messages_round_trip_through_the_out_file(tmp_path: Path) -> None:
    sent = [SentMessage("chan0", "tok-1 ünï", 1_700_000_000_123), SentMessage("chan1", 'a "q"', 0)]
    out = tmp_path / "sent.ndjson"
    out.write_text("".join(m.to_json() + "\n" for m in sent) + "\n")
    assert read_sent(out) == sent
