"""A user's month in one partition (issue 35, docs/storage.md) on the real Cassandra: a user-month past the
sink's cap (a bot) goes on in half days, and a replay by a new process writes rows into both its month and
its half days; a keyspace of the half-day layout is migrated by ``chatlog init``'s schema step. Every way,
the store reads each user's history once, in order, with the same months, latest month and counts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from core.user_months import needs_migration
from schemas.cql import is_half_day, is_month_period, user_period
from sink.writer.caches import NameCache, SpillGuard
from sink.writer.cassandra import close_sessions

from core.cql import apply_schema
from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings
from sink.writer.partition import write_partition
from store.line import LogLine
from store.protocol import ById
from store.read import CassandraStore
from tests.integration.serve.rename_story import DAY, T0, in_read_order, of_user, rename_story

pytestmark = pytest.mark.integration

FAR = 253_402_300_799_999


def _write(settings: SinkSettings, events: list[ChatEvent], guard: SpillGuard) -> None:
    stats = write_partition(
        ((encode(e), None, None) for e in events), settings, name_cache=NameCache(), spill_guard=guard
    )
    close_sessions()
    assert (stats.events, stats.deadletters) == (len(events), 0)


def _periods(session: Any) -> list[int]:
    rows = session.execute("SELECT DISTINCT channel_key, user_key, period FROM chat_by_user")
    return [row.period for row in rows]


def _migrated(session: Any) -> bool:
    return not needs_migration(session, session.keyspace)


async def _events(lines: AsyncIterator[LogLine]) -> list[ChatEvent]:
    return [line.event async for line in lines]


def _reads(session: Any) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        store = CassandraStore(session, fetch_size=50, probe_batch=7, channels_ttl_s=0)
        assert store.unmarked == (not _migrated(session))
        mid = T0 + DAY + 3 * 3_600_000
        return {
            "all": await _events(store.user_lines("newchan", "newname", 0, FAR)),
            "back": await _events(
                store.user_lines(ById("500", "c"), ById("1001", "u"), 0, FAR, reverse=True)
            ),
            "feb": await _events(store.user_lines("oldchan", "oldname", T0 + 2 * DAY, FAR)),
            "part": await _events(store.user_lines("newchan", "newname", T0, mid)),
            "months": await store.user_months("newchan", "oldname"),
            "latest": await store.latest_user_month("oldchan", ById("1001", "n")),
            "count": (await store.user_count("oldchan", "newname", 0, FAR))[0],
            "pick": await store.random_user_event("newchan", "newname"),
        }

    return asyncio.run(main())


def _check(got: dict[str, Any], story: list[ChatEvent]) -> None:
    mine = in_read_order(of_user(story))
    assert got["all"] == mine and len(mine) == 331
    assert got["back"] == mine[::-1]
    assert got["feb"] == [e for e in mine if e.sent_at >= T0 + 2 * DAY]
    assert got["part"] == [e for e in mine if e.sent_at < T0 + DAY + 3 * 3_600_000]
    assert got["months"] == [(2026, 2), (2026, 1)] and got["latest"] == (2026, 2)
    assert got["count"] == len(mine)
    assert got["pick"].message_id in {e.message_id for e in mine}


def test_a_spilled_user_month_and_a_replay_into_both_read_once(
    sink_settings: SinkSettings, session: Any
) -> None:
    story = rename_story()
    capped = sink_settings.model_copy(update={"sink_user_month_rows": 20})
    _write(capped, story, SpillGuard())
    periods = _periods(session)
    assert any(is_half_day(p) for p in periods) and any(is_month_period(p) for p in periods)
    spilled = session.execute("SELECT period FROM chat_by_user WHERE spilled = true ALLOW FILTERING").all()
    assert spilled and all(is_month_period(row.period) for row in spilled)
    _check(_reads(session), story)
    before = len(session.execute("SELECT message_id FROM chat_by_user").all())
    replay = sink_settings.model_copy(update={"sink_user_month_rows": 60})
    _write(replay, story, SpillGuard())  # a new process with a higher cap: rows 21-60 in month and half day
    assert len(session.execute("SELECT message_id FROM chat_by_user").all()) > before  # stored twice
    _check(_reads(session), story)


def test_a_keyspace_of_the_half_day_layout_is_read_once_migrated(
    sink_settings: SinkSettings, session: Any
) -> None:
    story = rename_story()
    _write(sink_settings, story, SpillGuard())
    assert all(is_month_period(p) for p in _periods(session))
    # the same rows as the half-day layout stored them, in a table without the static flag or the comment
    rows = session.execute("SELECT * FROM chat_by_user").all()
    session.execute("TRUNCATE chat_by_user")
    session.execute("ALTER TABLE chat_by_user DROP spilled")
    session.execute("ALTER TABLE chat_by_user WITH comment = ''")
    insert = session.prepare(
        "INSERT INTO chat_by_user (channel_key, user_key, period, sent_at, message_id, line, received_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    for row in rows:
        at = int(row.sent_at.timestamp() * 1000)
        values = (row.channel_key, row.user_key, user_period(at), row.sent_at, row.message_id, row.line)
        session.execute(insert, (*values, row.received_at))
    _check(_reads(session), story)  # read before the migration: every month's half days (slowly)
    # a sink of the month layout wrote a few rows of February before the migration ran
    late = [e for e in story if e.sent_at >= T0 + 5 * DAY]
    apply_schema(sink_settings)
    assert _migrated(session)
    _write(sink_settings, late, SpillGuard())
    _check(_reads(session), story)
    told: list[str] = []
    apply_schema(sink_settings, tell=told.append)  # migrated once: nothing to mark the second time
    assert told == []
