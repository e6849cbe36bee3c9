"""What the browser tests read: events made of real Twitch lines, written into a keyspace by
:mod:`store.write` (and coverage ledger rows), and the ``chatlog serve`` that reads them."""

from __future__ import annotations

import uuid
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from core.cql import connect
from core.settings import StackSettings
from core.testing import twitch_event
from schemas.chat_event import ChatEvent
from tests.integration.serve.events import write


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


def event(
    kind: str,
    channel: str,
    at: int,
    *,
    login: str | None = None,
    text: str | None = None,
    message_id: str | None = None,
    tags: dict[str, str] | None = None,
    user_id: str | None = None,
) -> ChatEvent:
    """The event an ingester makes of the Twitch line (:func:`core.testing.twitch_line`) sent at ``at``."""
    extra = dict(tags or {})
    display = extra.pop("display-name", None) if kind == "PRIVMSG" else None
    if display is None and login is not None and kind == "PRIVMSG":
        display = login.capitalize()
    if kind == "PRIVMSG" and message_id is None:
        message_id = str(uuid.uuid4())
    return twitch_event(
        kind,
        channel,
        sent_at=at,
        login=login,
        text=text,
        user_id=user_id,
        room_id=str(1000 + zlib.crc32(channel.encode()) % 1_000_000),  # a channel's own Twitch id
        message_id=message_id,
        display_name=display,
        extra=extra,
    )


def write_events(settings: StackSettings, events: list[ChatEvent]) -> None:
    """``events`` into the settings' keyspace through :mod:`store.write`, as a sink's task writes them."""
    write(settings, events)


def write_coverage(settings: StackSettings, rows: list[tuple[str, int, str, str]], last_seen: int) -> None:
    """Coverage ledger rows ``(channel, at, state, reason)`` of one worker run (replica 0, worker ``w1``)
    and its last sign of life, as the ledger writer (:mod:`sink.side.ledger`) stores them."""
    cluster, session = connect(settings)
    ks = settings.cassandra_keyspace
    try:
        insert = session.prepare(
            f"INSERT INTO {ks}.coverage_by_channel "
            "(channel, day, at, replica, worker, session, state, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for channel, at, state, reason in rows:
            session.execute(insert, (channel, at // 86_400_000, at, 0, "w1", 1, state, reason))
        seen = (
            f"UPDATE {ks}.coverage_sessions SET last_seen = %s "
            "WHERE replica = %s AND worker = %s AND session = %s"
        )
        session.execute(seen, (last_seen, 0, "w1", 1))
    finally:
        cluster.shutdown()


@dataclass
class Served:
    """A running ``chatlog serve`` and the keyspace it reads."""

    base: str
    settings: StackSettings

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.base + path, timeout=60)


@dataclass
class Keyspace:
    settings: StackSettings
    dir: Path
