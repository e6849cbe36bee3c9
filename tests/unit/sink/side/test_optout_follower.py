"""Opt-outs in the sink without Kafka or Cassandra: the one rule's filter (consent/rule.py, table-tested
in tests/unit/consent/test_rule.py) in write_partition with its test doubles, and the driver's follower
(sink/side/optout_follower.py) over the real registry's fold, fed by hand, with an erasure double: which set
each batch gets, and that an erasure waits for the batches written before the opt-out arrived."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from consent.records import OptOut, login_digest
from consent.registry import OptOutRegistry
from consent.rule import OptOutSet
from core.errors import ChatlogError
from core.irc_parse import parse_line
from core.settings import KafkaSettings
from core.testing import twitch_line
from core.testing_cassandra import Call, FakeSession
from core.times import epoch_ms
from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings
from sink.side.optout_follower import OptOutFollower
from sink.writer.partition import write_partition
from sink.writer.stats import WriteStats
from store.erase import ErasureReport
from tests.unit.sink.writer.partition_doubles import StorageDouble, wired

T0 = 1_700_000_000_000


def _event(
    kind: str = "PRIVMSG",
    *,
    login: str | None = "bob",
    user_id: str | None = "42",
    room_id: str | None = "500",
    text: str = "hi",
    n: int = 0,
) -> ChatEvent:
    line = twitch_line(
        kind, "chan", sent_at=T0 + n, login=login, text=text, user_id=user_id, room_id=room_id,
        message_id=f"00000000-0000-0000-0000-{n:012d}",
    )  # fmt: skip
    event = parse_line(line, received_at=T0 + n + 5, ingester="w")
    assert event is not None
    return event


def test_the_filter_matches_a_deleted_message_by_the_digest_an_erasure_kept() -> None:
    out = OptOutSet(users=frozenset({"42"}), login_digests=frozenset({login_digest("Bob")}))
    assert out.drops(_event("CLEARMSG", login="bob", user_id=None, text="deleted"))  # the name is gone
    assert not out.drops(_event("CLEARMSG", login="carol", user_id=None, text="deleted"))
    assert not out.drops(_event(user_id="44", login="bob"))  # the login of another id: not theirs
    assert login_digest("bob") == login_digest("BOB") != login_digest("bob ")
    assert "bob" not in login_digest("bob") and len(login_digest("bob")) == 64


def test_write_partition_writes_no_row_of_an_opted_out_user_and_counts_them() -> None:
    events = [
        _event(user_id="42", login="bob", n=1),
        _event(user_id="43", login="carol", n=2),
        _event("CLEARCHAT", login=None, user_id="42", text="bob", n=3),
        _event(user_id="43", login="carol", room_id="600", n=4),
    ]
    records = [(encode(e), 0, i) for i, e in enumerate(events)]
    storage = StorageDouble()
    optouts = OptOutSet(users=frozenset({"42"}), channels=frozenset({"600"}))
    settings = SinkSettings()  # type: ignore[call-arg]
    stats = write_partition(records, settings, wired(storage), optouts=optouts)
    assert (stats.events, stats.optout_dropped) == (1, 3)
    assert stats.optout_logins == {"bob": "42"}  # not carol's: her line was dropped for its channel
    written = {taken.origin[2] for taken in storage.taken}
    assert written == {1}  # only carol's line in the logged channel: no block, no name of the others
    assert WriteStats.from_dict(stats.to_dict()) == stats
    assert WriteStats.from_dict({**stats.to_dict(), "optout_dropped": 0}).optout_dropped == 0


class Registry(OptOutRegistry):
    """The real registry's fold and callbacks, fed by hand."""

    def __init__(self) -> None:
        super().__init__(KafkaSettings(), "t.optout")
        self.closed = False

    def start(self) -> None:
        pass

    def wait_ready(self, timeout_s: float) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def opt_out(self, kind: str, id_: str, *, keep_history: bool = False, by: str = "cli:test") -> OptOut:
        record = OptOut(
            kind="user" if kind == "user" else "channel", id=id_, by=by, at=int(time.time() * 1000),
            keep_history=keep_history,
        )  # fmt: skip
        self.apply(record.key, record)
        return record


class Eraser:
    """Records erasures (and may fail the first ones, as Cassandra down would)."""

    def __init__(self, fail: int = 0) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = fail
        self.done = threading.Event()

    def __call__(self, session: Any, keyspace: str, **kwargs: Any) -> ErasureReport:
        if self.fail:
            self.fail -= 1
            raise ChatlogError("Cassandra is down")
        self.calls.append({"keyspace": keyspace, **kwargs})
        self.done.set()
        return ErasureReport(user_id=kwargs.get("user_id"), channel_id=kwargs.get("channel_id"))


@pytest.fixture
def quiet_cassandra(monkeypatch: pytest.MonkeyPatch) -> list[list[OptOut]]:
    """No name history and no audit table: what the follower would read or write there."""
    audited: list[list[OptOut]] = []
    monkeypatch.setattr(OptOutFollower, "_learn_logins", lambda self, users: None)

    def record(self: OptOutFollower, optouts: list[OptOut]) -> bool:
        audited.append(list(optouts))
        return True

    monkeypatch.setattr(OptOutFollower, "_record", record)
    monkeypatch.setattr("sink.side.optout_follower.RETRY_S", 0.05)
    return audited


def _follower(registry: Registry, eraser: Eraser, **kwargs: Any) -> OptOutFollower:
    settings = SinkSettings(cassandra_keyspace="ks")  # type: ignore[call-arg]
    follower = OptOutFollower(settings, registry, connect=object, eraser=eraser, **kwargs)
    follower.start()
    return follower


def test_each_batch_gets_the_sets_of_its_start_and_an_erasure_waits_for_earlier_batches(
    quiet_cassandra: list[list[OptOut]],
) -> None:
    registry, eraser = Registry(), Eraser()
    follower = _follower(registry, eraser)
    try:
        with follower.batch() as first:
            assert not first
            record = registry.opt_out("user", "42")  # arrives while batch 1 is written with the old set
            time.sleep(0.3)
            assert eraser.calls == [], "the erasure must wait for the batch that may still write them"
            with follower.batch() as second:  # (a second batch would start after; here it shows the set)
                assert second.users == {"42"}
        assert eraser.done.wait(5)
        assert eraser.calls == [{"keyspace": "ks", "user_id": "42", "by": "sink:cli:test"}]
        assert quiet_cassandra == [[record]]  # the opt-out's audit row
        registry.opt_out("channel", "600")
        registry.opt_out("user", "43", keep_history=True)  # kept: audited, not erased
        deadline = time.monotonic() + 5
        while len(eraser.calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert eraser.calls[1] == {"keyspace": "ks", "channel_id": "600", "by": "sink:cli:test"}
        time.sleep(0.2)
        assert len(eraser.calls) == 2
        with follower.batch() as third:
            assert third.users == {"42", "43"} and third.channels == {"600"}
    finally:
        follower.close(5)
    assert registry.closed


def test_an_erasure_that_fails_is_retried_and_a_lifted_one_is_not_done(
    quiet_cassandra: list[list[OptOut]],
) -> None:
    registry, eraser = Registry(), Eraser(fail=2)
    follower = _follower(registry, eraser)
    try:
        registry.opt_out("user", "42", by="code:abcdefgh")
        assert eraser.done.wait(5)
        assert eraser.calls == [{"keyspace": "ks", "user_id": "42", "by": "sink:code:abcdefgh"}]
        assert follower.failures == 2
        # the other ingester of the pair wrote the same opt-out a moment before the erasure: not again
        follower._erased_at["user:42"] = int(time.time() * 1000) + 1000
        registry.opt_out("user", "42", by="code:abcdefgh")
        time.sleep(0.3)
        assert len(eraser.calls) == 1 and follower.pending == 0
    finally:
        follower.close(5)

    registry, eraser = Registry(), Eraser(fail=10**6)
    follower = _follower(registry, eraser)
    try:
        registry.opt_out("user", "7")
        time.sleep(0.2)
        registry.apply("user:7", None)  # lifted before Cassandra came back
        eraser.fail = 0
        deadline = time.monotonic() + 3
        while follower.pending and time.monotonic() < deadline:
            time.sleep(0.02)
        assert follower.pending == 0 and eraser.calls == []
    finally:
        follower.close(5)


def test_at_start_the_erasures_the_audit_does_not_show_are_caught_up(
    quiet_cassandra: list[list[OptOut]], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry, eraser = Registry(), Eraser()
    settings = SinkSettings(cassandra_keyspace="ks")  # type: ignore[call-arg]
    follower = OptOutFollower(settings, registry, connect=object, eraser=eraser, catch_up=True)
    registry.subscribe(follower._on_record)  # as if they were read while the registry caught up
    erased_before = registry.opt_out("user", "1")
    registry.opt_out("user", "2")
    registry.opt_out("user", "3", keep_history=True)
    monkeypatch.setattr(
        OptOutFollower,
        "_not_erased",
        lambda self, optouts: [o for o in optouts if not o.keep_history and o.id != erased_before.id],
    )
    follower.start()
    follower.close(5)  # waits for the erasures that may run (no batch is under way)
    assert [c.get("user_id") for c in eraser.calls] == ["2"]


def test_logins_seen_on_an_opted_out_users_events_are_matched_until_a_lift(
    quiet_cassandra: list[list[OptOut]],
) -> None:
    registry, eraser = Registry(), Eraser()
    follower = OptOutFollower(SinkSettings(cassandra_keyspace="ks"), registry)  # type: ignore[call-arg]
    follower.start()
    try:
        registry.opt_out("user", "42")
        assert follower.current().logins == frozenset()
        follower.learn({"bob": "42"})
        clearmsg = _event("CLEARMSG", login="bob", user_id=None, text="deleted")
        assert follower.current().drops(clearmsg)
        registry.apply("user:42", None)
        assert not follower.current().drops(clearmsg)
        assert eraser.calls == [] and not follower.erase  # no Cassandra: nothing erased
    finally:
        follower.close(5)


def _audit_session(rows: list[dict[str, Any]]) -> FakeSession:
    """Answers the consent audit's month reads (consent.audit.read) with ``rows``, newest first."""
    from types import SimpleNamespace

    from consent.audit import month_of

    newest_first = sorted((SimpleNamespace(**r) for r in rows), key=lambda r: r.at, reverse=True)

    def answer(call: Call) -> list[Any]:
        assert "consent_audit" in call.statement
        return [r for r in newest_first if month_of(epoch_ms(r.at)) == call.params[0]]

    return FakeSession(answer)


def test_the_erasures_owed_are_those_the_consent_audit_shows_none_for_since_the_opt_out() -> None:
    from datetime import UTC, datetime

    def at(ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)  # as the driver gives it

    def erase(user: str, ms: int, channel: str | None = None) -> dict[str, Any]:
        return {"at": at(ms), "action": "erase", "kind": "user", "id": user, "channel": channel,
                "actor": "cli:x", "reason": None, "deleted": None}  # fmt: skip

    session = _audit_session(
        [
            erase("1", T0 + 5),  # erased after the opt-out: nothing owed
            erase("2", T0 + 5, channel="chan"),  # only one channel's rows: still owed
            erase("3", T0 - 10),  # erased before this opt-out: owed again
            {**erase("4", T0 + 5), "action": "lift"},  # not an erasure
        ]
    )
    follower = OptOutFollower(
        SinkSettings(cassandra_keyspace="ks"),  # type: ignore[call-arg]
        Registry(),
        connect=lambda: session,
    )
    optouts = [OptOut(kind="user", id=user, by="cli:x", at=T0) for user in ("1", "2", "3", "4")]
    optouts.append(OptOut(kind="user", id="5", by="cli:x", at=T0, keep_history=True))
    assert [o.id for o in follower._not_erased(optouts)] == ["2", "3", "4"]
    assert (
        session.executed[-1].params[0] == 202311
    )  # read back to the month of the oldest opt-out, no further
