"""Each message of a demo run read once: what a reader (``chatlog serve``, ``chatlog logs``) gives of the
run's keyspace, for the faults that restart the sink.

A restarted sink does not know the ids its last batches wrote (its deduplication window is the driver's
memory, :mod:`sink.dedup`), and a batch run again may be cut into other blocks than the killed run wrote:
a message may then be stored in two blocks, as a copy past the window is (the demo's ``rows_doubled`` counts
the blocks that hold it, :func:`store.scan.channel_copies`). A reader drops a line it has read already
(:mod:`store.read`), and ``chatlog pack`` keeps one: what must hold is that every message is read once."""

from __future__ import annotations

from collections import Counter
from typing import Any

from core.settings import StackSettings


def doubled_in_reads(settings: StackSettings, details: dict[str, Any]) -> int:
    """How many simulator tokens the reader gives more than once over every channel of the run of
    ``details`` (a :class:`lab.demo.run.RunReport`'s) on the stack of ``settings``."""
    from chatlog.cli.log_reader import LogReader
    from lab.demo.run import run_channels, run_settings
    from lab.demo.verify import token_of

    run = run_settings(settings, str(details["name"]), str(details["run_id"]))
    tokens: Counter[str] = Counter()
    with LogReader(run) as reader:
        for channel in run_channels(str(details["run_id"]), int(details["channels"])):
            for event in reader.events(reader.channel(channel, None)):
                token = token_of(event.text) if event.kind == "PRIVMSG" else None
                if token is not None:
                    tokens[token] += 1
    return sum(1 for n in tokens.values() if n > 1)
