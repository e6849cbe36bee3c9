"""``chatlog names USER_ID|LOGIN [--channel]``: the logins a Twitch user (or channel) id had, by id or by
any of its logins (read by :mod:`store.names`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from core.errors import one_line
from core.times import format_time
from serve.terminal import escape_controls
from store.names import NameSeen, channel_ids, channel_names, user_ids, user_names


@dataclass(frozen=True)
class Identity:
    """One id and its whole name history (what ``chatlog names`` prints for each id it finds)."""

    id: str
    names: list[NameSeen]


async def identities(session: Any, keyspace: str, query: str, *, channel: bool = False) -> list[Identity]:
    """The ids ``query`` names and the history of each: ``query`` as an id (when it is all digits) and
    every id that used it as a login. Twitch logins may be all digits too, so a number is looked up
    both ways; an id with no history is left out. Empty: nothing is known by that id or login."""
    history = channel_names if channel else user_names
    ids_for = channel_ids if channel else user_ids
    candidates: list[str] = []
    text = query.strip()
    if text.isascii() and text.isdigit():
        candidates.append(text)
    candidates += [seen.id for seen in await ids_for(session, text, keyspace)]
    out: list[Identity] = []
    for id_ in dict.fromkeys(candidates):
        names = await history(session, id_, keyspace)
        if names:
            out.append(Identity(id_, names))
    return out


def register(app: typer.Typer) -> None:
    """Add ``names`` to ``app``."""

    @app.command("names")
    def names_command(
        query: Annotated[str, typer.Argument(metavar="USER_ID|LOGIN", help="A Twitch id or a login.")],
        channel: Annotated[
            bool, typer.Option("--channel", help="Look up a channel (room-id or channel login).")
        ] = False,
        output_format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
        as_json_flag: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """The name history of a user (or, with --channel, a channel): every login and display name of
        its id with when each was first and last seen (to the hour), found by id or by any login."""
        import asyncio

        from cassandra import DriverException, InvalidRequest

        from core.cql import open_session, quiet_driver_logs, refusal_reason
        from core.errors import ChatlogError
        from core.settings import KEYSPACE_OPTION, CassandraSettings, load

        if as_json_flag:
            output_format = "json"
        if output_format not in ("text", "json"):
            raise ChatlogError(f"--format must be text or json, not {output_format[:40]!r}")
        settings = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
        quiet_driver_logs()
        cluster, session = open_session(settings)
        try:
            found = asyncio.run(identities(session, settings.cassandra_keyspace, query, channel=channel))
        except InvalidRequest as exc:
            reason = refusal_reason(exc)
            raise ChatlogError(
                f"reading the name history in keyspace {settings.cassandra_keyspace}: {reason} "
                "(`chatlog init` creates its tables)"
            ) from None
        except DriverException as exc:
            raise ChatlogError(f"reading the name history: {one_line(exc)}") from None
        finally:
            cluster.shutdown()
        if not found:
            what = "channel" if channel else "user"
            typer.echo(f"no {what} known by id or login '{escape_controls(query.strip()[:60])}'", err=True)
            raise typer.Exit(1)
        typer.echo(as_json(query, channel, found) if output_format == "json" else as_text(channel, found))


def _when(ms: int | None) -> str:
    return "(expired)" if ms is None else format_time(ms)


def as_text(channel: bool, found: list[Identity]) -> str:
    """One block per id: ``user id 123`` then a line per login, oldest first (times UTC, to the hour).
    Names come from chat tags: control characters are shown escaped (:func:`escape_controls`)."""
    lines: list[str] = []
    for identity in found:
        lines.append(f"{'channel' if channel else 'user'} id {escape_controls(identity.id)}")
        for n in identity.names:
            shown = f" ({n.display_name})" if n.display_name and n.display_name != n.login else ""
            name = escape_controls(n.login + shown)
            lines.append(f"  {name}: {_when(n.first_seen_ms)} .. {_when(n.last_seen_ms)}")
    return "\n".join(lines)


def as_json(query: str, channel: bool, found: list[Identity]) -> str:
    return json.dumps(
        {
            "query": query.strip(),
            "kind": "channel" if channel else "user",
            "ids": [
                {
                    "id": identity.id,
                    "names": [
                        {
                            "login": n.login,
                            **({} if channel else {"display_name": n.display_name}),
                            "first_seen": n.first_seen_ms,
                            "last_seen": n.last_seen_ms,
                        }
                        for n in identity.names
                    ],
                }
                for identity in found
            ],
        }
    )
