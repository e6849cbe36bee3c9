"""The real Twitch lines other libraries' test suites assert (``../shared/testdata/twitch_peer_lines.jsonl``,
read at run time, never copied here): absent in a user's clone, where the tests that need them skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PEER_LINES = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "twitch_peer_lines.jsonl"


def peer_lines() -> list[dict[str, Any]]:
    """Every record of the file (its ``raw`` line and the values asserted), none when it is absent."""
    if not PEER_LINES.exists():
        return []
    return [json.loads(line) for line in PEER_LINES.read_text(encoding="utf-8").splitlines() if line.strip()]
