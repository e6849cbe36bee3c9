"""Opt-outs in the sink on the real stack (Kafka -> Spark -> Cassandra, issue 20): a self-service opt-out
that nobody followed with `chatlog erase` is erased by the sink, audited; a channel opt-out too; a backfill
of the whole retained topic writes none of their rows back; a user who opts out while the sink runs is
erased after the batches written before, what they say afterwards is never stored, and after a lift their
new lines are stored again while the old ones stay gone."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from consent import audit
from consent.publish import OptOutPublisher
from core.kafka_admin import admin_client, ensure_topics
from core.testing import twitch_event
from schemas.chat_event import ChatEvent
from sink.job import backfill, stream
from sink.settings import SinkSettings
from store import names
from store.keys import filed_under
from store.protocol import ById, Named
from store.read import LogReader
from store.scan import stored_lines
from tests.integration.sink.records import make_events, message_ids, produce, uuids

pytestmark = pytest.mark.integration

CODE_BY = "code:abcdefgh"
LIVECHAN, LIVE1 = ById("700", "livechan"), ById("3001", "live1")
FAR = 253_402_300_799_999
"""A time after every line (the end of year 9999)."""


@pytest.fixture
def settings(sink_settings: SinkSettings, unique: str) -> Iterator[SinkSettings]:
    """The sink's test settings with an opt-out topic of their own (deleted afterwards)."""
    found = sink_settings.model_copy(update={"topic_optout": f"t{unique}.optout"})
    ensure_topics(found)
    yield found
    admin = admin_client(found)
    for fut in admin.delete_topics([found.topic_optout], operation_timeout=30).values():
        with contextlib.suppress(Exception):
            fut.result(timeout=60)


class Store:
    """What the test keyspace holds, read through the storage's readers (:mod:`store.scan`: every line of
    a copy; :class:`store.read.LogReader`: what ``chatlog serve`` reads; :mod:`store.names`)."""

    def __init__(self, settings: SinkSettings) -> None:
        from core.cql import connect

        self.settings = settings
        self.keyspace = settings.cassandra_keyspace
        self.cluster, self.session = connect(settings, keyspace=settings.cassandra_keyspace)

    def user_keys(self) -> set[str | None]:
        """The user keys the lines of the user copy are filed under."""
        return {line[5] for line in stored_lines(self.session, self.keyspace, "user")}

    def read(self) -> list[str]:
        """The message uuid of every line a reader gives, every channel's whole time (each line once)."""

        async def main() -> list[str]:
            reader = LogReader(self.session, channels_ttl_s=0)
            out = []
            for channel in await reader.channels():
                named: Named = channel.login
                if channel.channel_id is not None:
                    named = ById(channel.channel_id, channel.login)
                out += [str(line.message_id) async for line in reader.channel_lines(named, 0, FAR)]
            return sorted(out)

        return asyncio.run(main())

    def user_read(self, channel: ById, user: ById) -> list[str]:
        """The message uuid of every line a reader gives of ``user`` in ``channel``."""

        async def main() -> list[str]:
            reader = LogReader(self.session, channels_ttl_s=0)
            return sorted([str(line.message_id) async for line in reader.user_lines(channel, user, 0, FAR)])

        return asyncio.run(main())

    def user_names(self, user_id: str) -> list[str]:
        return [n.login for n in asyncio.run(names.user_names(self.session, user_id, self.keyspace))]

    def channel_names(self, channel_id: str) -> list[str]:
        return [n.login for n in asyncio.run(names.channel_names(self.session, channel_id, self.keyspace))]

    def audit(self) -> list[audit.AuditEntry]:
        return audit.read(self.session, self.settings.cassandra_keyspace)

    def close(self) -> None:
        self.cluster.shutdown()


def _opted_out(event: ChatEvent, users: set[str], channels: set[str], logins: set[str]) -> bool:
    if event.channel_id in channels or event.user_id in users:
        return True
    if event.kind == "CLEARCHAT" and event.tags.get("target-user-id") in users:
        return True
    return event.user_id is None and event.user_login in logins


def test_the_sink_erases_opt_outs_nobody_erased_and_a_backfill_writes_none_of_them_back(
    settings: SinkSettings, spark_session: Any
) -> None:
    t0 = int(time.time() * 1000) - 600_000
    events = make_events(460)  # users user0..user22 (ids 1000..1022), channels chan0..chan6 (ids 500..506)
    produced = produce(settings, events, bad_every=10**9, timestamp_ms=t0)
    stream.run(settings, available_now=True)
    store = Store(settings)
    try:
        assert {"1007", "login:user7", "1011"} <= store.user_keys()
        in_503 = set(uuids(e.message_id for e in events if e.channel_id == "503"))
        assert in_503 and in_503 <= set(message_ids(settings)) and in_503 & set(message_ids(settings, "user"))
        assert store.user_names("1007") and store.channel_names("503")

        publisher = OptOutPublisher(settings)
        publisher.add("user", "1007", reason=None, by=CODE_BY)  # self-service: nobody ran chatlog erase
        publisher.add("channel", "503", reason="test", by="cli:test")
        publisher.add("user", "1011", reason="test", by="cli:test", keep_history=True)
        totals = stream.run(settings, available_now=True)  # nothing new to read: it catches up erasures
        assert totals.events_in == 0

        gone = {e.message_id for e in events if _opted_out(e, {"1007"}, {"503"}, {"user7"})}
        kept = sorted(uuids(m for m in produced.events if m not in gone))
        kept_user = sorted(uuids(m for m, e in produced.events.items() if m not in gone and filed_under(e)))
        assert sorted(message_ids(settings)) == kept  # each line once in each copy, none of the erased
        assert sorted(message_ids(settings, "user")) == kept_user
        assert store.read() == kept
        user_keys = store.user_keys()
        assert not {"1007", "login:user7"} & user_keys and "1011" in user_keys  # 1011 kept its history
        assert store.user_names("1007") == [] and store.channel_names("503") == []
        assert store.user_names("1011") != []
        entries = {(e.action, e.kind, e.id): e for e in store.audit()}
        assert entries["erase", "user", "1007"].by == f"sink:{CODE_BY}"
        assert entries["erase", "user", "1007"].deleted.get("channel_blocks", 0) > 0
        assert entries["erase", "channel", "503"].by == "sink:cli:test"
        assert ("erase", "user", "1011") not in entries
        assert entries["optout", "user", "1007"].by == CODE_BY  # the opt-out itself, audited by the sink
        assert entries["optout", "channel", "503"].by == "cli:test"  # (the CLI audits its own too)

        # a replay of the whole retained topic writes none of them back (nor 1011's, which stay as they were)
        result = backfill.run(settings, t0)
        assert set(message_ids(settings)) == set(kept)  # (a line the backfill wrote again is in two blocks)
        assert set(message_ids(settings, "user")) == set(kept_user)
        assert store.read() == kept  # and read once
        assert not {"1007", "login:user7"} & store.user_keys()
        dropped = {
            e.message_id for e in events if _opted_out(e, {"1007", "1011"}, {"503"}, {"user7", "user11"})
        }
        assert result.opted_out == len(dropped) > 0
        assert result.written.events == len(produced.events) - len(dropped)
        assert f"and {result.opted_out} of opted-out users or channels" in result.summary()
        # a restarted sink still knows the erased user's login (kept as a digest: the name history is
        # gone): a deleted message naming user7 by login only is not stored; one naming user8 is
        deleted = [
            twitch_event(
                "CLEARMSG", "chan0", sent_at=t0 + 500_000 + n, login=login, room_id="500", text="gone",
                message_id=f"00000000-0000-0000-0002-{n:012d}",
            )
            for n, login in enumerate(("user7", "user8"))
        ]  # fmt: skip
        assert all(e.user_id is None and e.user_login for e in deleted)
        produce(settings, deleted, duplicate_every=10**9, bad_every=10**9)
        again = stream.run(settings, available_now=True)  # a restart owes nothing: the audit shows them
        assert (again.written.events, again.written.optout_dropped) == (1, 1)
        assert store.read() == sorted([*kept, *uuids([deleted[1].message_id])])
        assert set(message_ids(settings)) == {*kept, *uuids([deleted[1].message_id])}
        assert len([e for e in store.audit() if e.action == "erase"]) == 2
    finally:
        store.close()


def test_a_user_who_opts_out_while_the_sink_runs_is_erased_and_stays_unstored(
    settings: SinkSettings, spark_session: Any
) -> None:
    now = int(time.time() * 1000)

    def line(n: int, user: int, text: str) -> ChatEvent:
        return twitch_event(
            "PRIVMSG", "livechan", sent_at=now + n, login=f"live{user}", text=text, user_id=str(3000 + user),
            room_id="700", message_id=f"00000000-0000-0000-0001-{n:012d}",
        )  # fmt: skip

    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            stream.run(settings, stop=stop)
        except BaseException as exc:
            failure.append(exc)

    store = Store(settings)
    sink = threading.Thread(target=run, name="sink")
    sink.start()
    try:

        def until(what: str, done: Callable[[], bool], timeout: float = 90.0) -> None:
            deadline = time.monotonic() + timeout
            while not done():
                assert not failure, failure
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                time.sleep(0.3)

        first = [line(n, n % 2, f"before {n}") for n in range(20)]
        produce(settings, first, bad_every=10**9)
        until("the first lines stored", lambda: len(message_ids(settings)) == 20)
        assert "3001" in store.user_keys()

        OptOutPublisher(settings).add("user", "3001", reason=None, by=CODE_BY)
        until("the erasure", lambda: any(e.action == "erase" for e in store.audit()))
        assert "3001" not in store.user_keys()
        assert sorted(message_ids(settings)) == sorted(uuids(e.message_id for e in first[0::2]))
        assert sorted(message_ids(settings, "user")) == sorted(uuids(e.message_id for e in first[0::2]))

        later = [line(100 + n, n % 2, f"after {n}") for n in range(20)]  # 3001 speaks again
        produce(settings, later, bad_every=10**9)
        until("the other user's new lines", lambda: len(message_ids(settings)) == 20)
        time.sleep(1.0)
        assert sorted(message_ids(settings)) == sorted(uuids(e.message_id for e in first[0::2] + later[0::2]))
        assert "3001" not in store.user_keys()
        assert store.user_names("3001") == [] and store.user_read(LIVECHAN, LIVE1) == []

        OptOutPublisher(settings).remove("user", "3001", by="cli:test")  # lifted: stored again from now on
        time.sleep(1.0)
        back = [line(200 + n, 1, f"back {n}") for n in range(3)]
        produce(settings, back, bad_every=10**9)
        until("the lifted user's new lines", lambda: len(message_ids(settings)) == 23)
        expected = first[0::2] + later[0::2] + back  # the old ones stay gone
        assert sorted(message_ids(settings)) == sorted(uuids(e.message_id for e in expected))
        assert sorted(message_ids(settings, "user")) == sorted(uuids(e.message_id for e in expected))
        assert store.read() == sorted(uuids(e.message_id for e in expected))
        lifted = store.user_read(LIVECHAN, LIVE1)  # the lifted user's log, as a reader finds it
    finally:
        stop.set()
        sink.join(120)
        store.close()
    assert not sink.is_alive() and not failure, failure
    assert lifted == sorted(uuids(e.message_id for e in back))
