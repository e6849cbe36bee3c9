"""A keyspace the sink's executor filled with chat events over several channels, buckets and user periods
(user5, :data:`TARGET_ID`, the one erased), and every row of every table erasure touches, read back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sink.writer.caches import IndexCache, NameCache
from sink.writer.cassandra import close_sessions

from core.testing import chat_events, twitch_event
from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings
from sink.writer.partition import write_partition
from store.erase import row_user_key

DAY_MS = 86_400_000
BASE_MS = 1_790_000_000_000 - 1_790_000_000_000 % 300_000  # a bucket start (2026-09-21)
TARGET_ID = "1005"
"""user5: sends messages, is timed out (CLEARCHAT with target-user-id), has messages deleted (CLEARMSG,
by login only)."""
TARGET_LOGIN = "user5"


@dataclass(frozen=True)
class Filled:
    settings: SinkSettings
    events: list[ChatEvent]


def lone_events() -> list[ChatEvent]:
    """A bucket of chan0 that holds only user5's lines (erased as a partition), and in chan1 a run of three
    of user5's lines between two of user7's (erased as a range)."""
    lone_at = BASE_MS - 2 * 3_600_000
    run_at = BASE_MS - 3 * 3_600_000
    out = [
        twitch_event(
            "PRIVMSG",
            "chan0",
            sent_at=lone_at + i * 1000,
            login=TARGET_LOGIN,
            user_id=TARGET_ID,
            room_id="500",
            text=f"alone {i}",
            message_id=f"{i:08d}-0000-4000-8000-000000000001",
        )
        for i in range(4)
    ]
    for i, login in enumerate(["user7", TARGET_LOGIN, TARGET_LOGIN, TARGET_LOGIN, "user7"]):
        user_id = TARGET_ID if login == TARGET_LOGIN else "1007"
        out.append(
            twitch_event(
                "PRIVMSG",
                "chan1",
                sent_at=run_at + i * 1000,
                login=login,
                user_id=user_id,
                room_id="501",
                text=f"run {i}",
                message_id=f"{i:08d}-0000-4000-8000-000000000002",
            )
        )
    out.append(  # a moderator deleted a message of user5's: the line names user5 by login only
        twitch_event(
            "CLEARMSG",
            "chan2",
            sent_at=run_at + 7000,
            login=TARGET_LOGIN,
            room_id="502",
            text="run 2",
            message_id="00000002-0000-4000-8000-000000000002",
        )
    )
    return out


def all_events() -> list[ChatEvent]:
    """600 events on 3 channels at each of 5 times 8 days apart (5 user periods), plus :func:`lone_events`."""
    events: list[ChatEvent] = []
    for k in range(5):
        events += chat_events(
            600, channels=3, now_ms=BASE_MS - k * (8 * DAY_MS + 420_000), id_prefix=f"b{k}-"
        )
    return events + lone_events()


def write(settings: SinkSettings, events: list[ChatEvent]) -> None:
    stats = write_partition(
        ((encode(e), None, None) for e in events), settings, index_cache=IndexCache(), name_cache=NameCache()
    )
    close_sessions()
    assert (stats.events, stats.deadletters) == (len(events), 0)


def fill(keyspace: str, tmp_path: Path) -> Filled:
    """:func:`all_events` written into ``keyspace`` by the sink's executor."""
    values: dict[str, Any] = {
        "cassandra_keyspace": keyspace,
        "sink_checkpoint": str(tmp_path / "checkpoint"),
        "sink_metrics_port": 0,
    }
    settings = SinkSettings(**values)
    events = all_events()
    write(settings, events)
    return Filled(settings, events)


@dataclass(frozen=True)
class Tables:
    """Every row of every table erasure touches (small keyspaces only)."""

    chat_by_channel: list[tuple[str, str | None]]
    """(channel_key, user key of the row)"""
    chat_by_user: list[tuple[str, str]]
    """(channel_key, user_key)"""
    chat_buckets: list[str]
    user_names: list[tuple[str, str]]
    user_ids_by_login: list[tuple[str, str]]
    channel_names: list[tuple[str, str]]
    channel_ids_by_login: list[tuple[str, str]]
    user_login_keys: list[tuple[str, int, str]]
    """(channel_key, period, user_key)"""
    lines: list[str]


def read_tables(session: Any) -> Tables:
    from core.times import epoch_ms  # the same conversion the erasure uses

    by_channel = []
    lines = []
    for r in session.execute("SELECT channel_key, sent_at, message_id, line FROM chat_by_channel"):
        by_channel.append((r.channel_key, row_user_key(r.line, r.message_id, epoch_ms(r.sent_at))))
        lines.append(r.line)
    return Tables(
        chat_by_channel=by_channel,
        chat_by_user=[
            (r.channel_key, r.user_key)
            for r in session.execute("SELECT channel_key, user_key FROM chat_by_user")
        ],
        chat_buckets=[r.channel_key for r in session.execute("SELECT channel_key FROM chat_buckets")],
        user_names=[
            (r.user_id, r.user_login) for r in session.execute("SELECT user_id, user_login FROM user_names")
        ],
        user_ids_by_login=[
            (r.user_login, r.user_id)
            for r in session.execute("SELECT user_login, user_id FROM user_ids_by_login")
        ],
        channel_names=[
            (r.channel_id, r.channel)
            for r in session.execute("SELECT channel_id, channel FROM channel_names")
        ],
        channel_ids_by_login=[
            (r.channel, r.channel_id)
            for r in session.execute("SELECT channel, channel_id FROM channel_ids_by_login")
        ],
        user_login_keys=[
            (r.channel_key, r.period, r.user_key)
            for r in session.execute("SELECT channel_key, period, user_key FROM user_login_keys")
        ],
        lines=lines,
    )
