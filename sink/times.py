"""Points in time given on the command line: ISO-8601 or epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

from chatlog.errors import ChatlogError


def parse_time(text: str) -> int:
    """Epoch ms of ``text``: digits are epoch ms, anything else ISO-8601 (UTC unless it says otherwise)."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise ChatlogError(
            f"not a time: {text!r} (use ISO-8601 such as 2026-11-21T15:04:05Z, or epoch milliseconds)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def format_time(ms: int) -> str:
    """``2026-11-21 15:04:05`` (UTC) for epoch ms."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
