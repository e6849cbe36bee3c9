"""What a person types after a run to look at what it logged: the ``chatlog logs`` command of one of its
channels, the command that serves its keyspace, and that channel's page in the browser."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlencode

from core.errors import ChatlogError

_ANY_ADDRESS = ("", "0.0.0.0", "::", "[::]")


def busiest(channels: Iterable[str], fallback: str) -> str:
    """The channel named most often (the one with most lines sent), else ``fallback``."""
    counts = Counter(channels)
    return counts.most_common(1)[0][0] if counts else fallback


def look_lines(
    *, program: str, keyspace: str, channel: str, since_ms: int, day: date, host: str, port: int
) -> list[str]:
    """The lines printed at the end of a run (see the module's docstring)."""
    since = datetime.fromtimestamp(since_ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    shown_host = "127.0.0.1" if host in _ANY_ADDRESS else (f"[{host}]" if ":" in host else host)
    query = urlencode({"channel": channel, "date": day.isoformat()})
    return [
        f"look at what was logged (keyspace {keyspace}, channel #{channel}):",
        f"  {program} logs {channel} --keyspace {keyspace} --since {since}",
        f"  CHATLOG_CASSANDRA_KEYSPACE={keyspace} {program} serve",
        f"  then open http://{shown_host}:{port}/?{query}",
    ]


def serve_address() -> tuple[str, int]:
    """Where ``chatlog serve`` would listen with this environment (its defaults when a setting is wrong:
    the serve command would then say so itself)."""
    from core.settings import load
    from serve.settings import ServeSettings

    try:
        settings = load(ServeSettings)
    except ChatlogError:
        fields = ServeSettings.model_fields
        return str(fields["serve_host"].default), int(fields["serve_port"].default)
    return settings.serve_host, settings.serve_port


def program_name(argv0: str = sys.argv[0], cwd: Path | None = None) -> str:
    """How to call this ``chatlog``: plain ``chatlog`` when that is the one on the PATH, else its path
    (relative to the working directory when under it, as ``.venv/bin/chatlog`` after ``make demo``)."""
    path = Path(argv0)
    if path.name != "chatlog":
        return "chatlog"
    on_path = shutil.which("chatlog")
    if on_path is not None and Path(on_path).resolve() == path.resolve():
        return "chatlog"
    here = (cwd or Path.cwd()).resolve()
    full = (here / path).resolve()
    try:
        relative = str(full.relative_to(here))
    except ValueError:
        return str(full)
    return relative if "/" in relative else f"./{relative}"
