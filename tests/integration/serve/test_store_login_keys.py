"""The index of login user keys (``user_login_keys``, issue 35) on the real Cassandra: a user read by id reads
their ``login:`` partition only in the months it has rows (a deleted message names its author by login only),
and reads every month right; a keyspace made before the index is read right before ``chatlog init`` and
indexed by it."""

from __future__ import annotations

import asyncio
import calendar
from typing import Any

import pytest
from core.user_months import LOGINS_INDEXED, MIGRATED, comment_of
from schemas.cql import month_period

from core.cql import apply_schema
from schemas.chat_event import ChatEvent
from sink.settings import SinkSettings
from store.protocol import ById
from store.read import CassandraStore
from tests.integration.serve.events import alice_and_bob, write

pytestmark = pytest.mark.integration

JAN = calendar.timegm((2026, 1, 10, 12, 0, 0)) * 1000
FEB = calendar.timegm((2026, 2, 10, 12, 0, 0)) * 1000
JAN_1, FEB_1, MAR_1 = (calendar.timegm((2026, m, 1, 0, 0, 0)) * 1000 for m in (1, 2, 3))
LOGIN_KEY = "login:alice"


def _story() -> list[ChatEvent]:
    """alice (1001) chats in January and February in channel 500; one of her January messages is deleted
    (CLEARMSG: her login only, no user id); bob chats in both months."""
    return alice_and_bob((JAN, FEB), lines=5, step_ms=60_000)


class _Recorded:
    """A session that records the user keys of the ``chat_by_user`` statements it is sent."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.user_reads: list[bytes | str] = []
        self.index_reads = 0
        self.name_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute_async(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        prepared = getattr(statement, "prepared_statement", statement)
        cql = getattr(prepared, "query_string", str(prepared))
        if "FROM chat_by_user" in cql:
            values = list(args[0]) if args and args[0] else list(getattr(statement, "values", ()) or ())
            self.user_reads.extend(v for v in values if isinstance(v, (bytes, str)))
        elif "FROM user_login_keys" in cql:
            self.index_reads += 1
        elif "FROM user_names" in cql:
            self.name_reads += 1
        return self._session.execute_async(statement, *args, **kwargs)

    def read_login_key(self) -> bool:
        return any(v in (LOGIN_KEY, LOGIN_KEY.encode()) for v in self.user_reads)


def _month(store: CassandraStore, lo: int, hi: int) -> list[ChatEvent]:
    async def main() -> list[ChatEvent]:
        return [line.event async for line in store.user_lines("chan", "alice", lo, hi)]

    return asyncio.run(main())


def _check_reads(session: Any, *, indexed: bool) -> None:
    story = _story()
    recorded = _Recorded(session)
    store = CassandraStore(recorded, channels_ttl_s=60)
    assert store.login_keys.indexed == indexed
    alices = [e for e in story if e.user_login == "alice"]
    jan = _month(store, JAN_1, FEB_1)
    assert [e.message_id for e in jan] == [e.message_id for e in sorted(alices, key=lambda e: e.sent_at)][:6]
    assert any(e.kind == "CLEARMSG" for e in jan)  # the deleted message, under her login key
    assert recorded.read_login_key()
    recorded.user_reads.clear()
    feb = _month(store, FEB_1, MAR_1)
    assert [e.text for e in feb] == [f"a{i}" for i in range(5)]
    # February: her login key has no row there; indexed, it is not read at all
    assert recorded.read_login_key() == (not indexed)

    async def months() -> list[tuple[int, int]]:
        return await store.user_months("chan", "alice")

    assert asyncio.run(months()) == [(2026, 2), (2026, 1)]


def test_a_login_key_is_read_only_in_the_months_it_has_rows(
    sink_settings: SinkSettings, session: Any
) -> None:
    write(sink_settings, _story())
    rows = session.execute("SELECT channel_key, period, user_key FROM user_login_keys").all()
    assert [(r.channel_key, r.period, r.user_key) for r in rows] == [("500", month_period(JAN), LOGIN_KEY)]
    _check_reads(session, indexed=True)


def test_a_keyspace_made_before_the_index_is_read_right_and_indexed_by_init(
    sink_settings: SinkSettings, session: Any
) -> None:
    write(sink_settings, _story())
    keyspace = sink_settings.cassandra_keyspace
    session.execute("DROP TABLE user_login_keys")  # as a keyspace of the month layout had it
    session.execute(f"ALTER TABLE chat_by_user WITH comment = '{MIGRATED}'")
    _check_reads(session, indexed=False)  # every login key read, as before the index
    told: list[str] = []
    apply_schema(sink_settings, tell=told.append)
    assert comment_of(session, keyspace) == LOGINS_INDEXED
    assert "cql: 1 login key month(s) indexed" in " ".join(told)
    rows = session.execute("SELECT channel_key, period, user_key FROM user_login_keys").all()
    assert [(r.channel_key, r.period, r.user_key) for r in rows] == [("500", month_period(JAN), LOGIN_KEY)]
    _check_reads(session, indexed=True)
    told.clear()
    apply_schema(sink_settings, tell=told.append)  # done: no scan the second time
    assert told == []


def test_a_user_read_by_id_looks_up_their_logins_only_where_a_login_key_has_rows(
    sink_settings: SinkSettings, session: Any
) -> None:
    write(sink_settings, _story())
    recorded = _Recorded(session)
    store = CassandraStore(recorded, channels_ttl_s=60)
    alice = ById("1001", "alice")

    def month(lo: int, hi: int) -> list[ChatEvent]:
        async def main() -> list[ChatEvent]:
            return [line.event async for line in store.user_lines(ById("500", "chan"), alice, lo, hi)]

        return asyncio.run(main())

    feb = month(FEB_1, MAR_1)  # no login key has rows in February: her id key alone, no name lookup
    assert [e.text for e in feb] == [f"a{i}" for i in range(5)]
    assert recorded.name_reads == 0 and not recorded.read_login_key()
    jan = month(JAN_1, FEB_1)  # January's index names her login key: her logins looked up, the key read
    assert recorded.name_reads == 1 and recorded.read_login_key()
    assert [e.kind for e in jan].count("CLEARMSG") == 1 and len(jan) == 6

    async def count() -> tuple[int, str | None]:
        return await store.user_count(ById("500", "chan"), alice, FEB_1, MAR_1)

    assert asyncio.run(count()) == (5, "1001")
