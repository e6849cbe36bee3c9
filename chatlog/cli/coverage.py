"""``chatlog coverage CHANNEL``: when a channel was logged, by whom, and when it was not."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from core.coverage_spans import filled_note
from core.logins import login_of
from core.times import format_time, now_ms
from serve.coverage import Coverage


def register(app: typer.Typer) -> None:
    @app.command("coverage")
    def coverage_command(
        channel: Annotated[str, typer.Argument(help="Channel login (with or without #).")],
        since: Annotated[
            str | None, typer.Option(help="From this time: ISO-8601 or epoch ms (default: 24 hours ago).")
        ] = None,
        until: Annotated[str | None, typer.Option(help="Until this time (default: now).")] = None,
        output_format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """A channel's coverage spans (per replica group and ingester) and gaps, from the ledger."""

        from core.cql import open_session, quiet_driver_logs
        from core.errors import ChatlogError
        from core.settings import KEYSPACE_OPTION, CassandraSettings, load
        from core.times import time_window
        from serve.coverage import read_ledger

        if output_format not in ("text", "json"):
            raise ChatlogError(f"--format must be text or json, not {output_format[:40]!r}")
        name = login_of(channel)
        if not name:
            raise ChatlogError("CHANNEL is empty")  # as `chatlog logs` says it
        since_ms, until_ms = time_window(since, until, now_ms=now_ms())
        settings = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
        quiet_driver_logs()
        cluster, session = open_session(settings)
        try:
            found = read_ledger(session, settings.cassandra_keyspace, name, since_ms, until_ms)
        finally:
            cluster.shutdown()
        typer.echo(as_json(found) if output_format == "json" else as_text(found))


def as_text(cov: Coverage) -> str:
    lines = [f"#{cov.channel} {format_time(cov.since_ms)} .. {format_time(cov.until_ms)} (UTC)"]
    if not cov.spans:
        lines.append("no coverage recorded in this range")
        return "\n".join(lines)
    lines.append("spans:")
    for s in cov.spans:
        end = "now" if s.end_reason == "open" else f"{format_time(s.end)} ({s.end_reason})"
        lines.append(f"  r{s.replica} {s.worker}: {format_time(s.start)} .. {end}")
    lines.append(f"gaps: {len(cov.gaps)}" + (", none" if not cov.gaps else ""))
    for g in cov.gaps:
        lines.append(
            f"  {format_time(g.start)} .. {format_time(g.end)} ({g.seconds:.1f} s): {g.why}{filled_note(g)}"
        )
    if cov.fills:
        lines.append(f"filled from peers: {len(cov.fills)}")
    for f in cov.fills:
        left_out = f", {f.dropped} left out" if f.dropped else ""
        lines.append(
            f"  {format_time(f.start)} .. {format_time(f.end)} from {f.peer}: {f.lines} lines{left_out} "
            f"(filled {format_time(f.filled_at)})"
        )
    return "\n".join(lines)


def as_json(cov: Coverage) -> str:
    return json.dumps(
        {
            "channel": cov.channel,
            "since": cov.since_ms,
            "until": cov.until_ms,
            "spans": [
                {
                    "replica": s.replica,
                    "worker": s.worker,
                    "start": s.start,
                    "end": s.end,
                    "end_reason": s.end_reason,
                }
                for s in cov.spans
            ],
            "gaps": [
                {
                    "start": g.start,
                    "end": g.end,
                    "seconds": g.seconds,
                    "why": g.why,
                    "filled_from": list(g.filled_from),
                }
                for g in cov.gaps
            ],
            "fills": [
                {
                    "start": f.start,
                    "end": f.end,
                    "peer": f.peer,
                    "filled_at": f.filled_at,
                    "lines": f.lines,
                    "dropped": f.dropped,
                }
                for f in cov.fills
            ],
        }
    )
