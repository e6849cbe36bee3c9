"""Consent in the ingester (ingest/consent.py), without Kafka: the real registry's fold (records applied by
hand), a publisher double, the real producer over a librdkafka double, the worker with doubles."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import pytest
from confluent_kafka import Consumer

from consent.records import Code, OptOut
from consent.registry import OptOutRegistry
from consent.settings import ConsentSettings
from core.irc_parse import parse_line, roomstate
from core.settings import KafkaSettings
from core.testing import FakeClock, FakeConsumer, FakeMessage, FakeProducer, eventually, twitch_line
from ingest.consent import OptOutGate, is_broadcaster, parse_command
from ingest.coverage import CoverageTracker
from ingest.membership import Membership
from ingest.producer import IngestProducer, with_client_id_tags
from ingest.settings import IngestSettings
from ingest.worker import Worker
from schemas import chat_event
from schemas.chat_event import ChatEvent
from tests.unit.ingest.worker_doubles import CHANNELS, MetricsDouble, PoolDouble, WatchDouble

T0 = 1_700_000_000_000
CODE = "abcdefgh"


class Registry(OptOutRegistry):
    """The real registry's fold and callbacks, fed by hand (no reader thread)."""

    def __init__(self) -> None:
        super().__init__(KafkaSettings(), "t.optout")
        self.started = self.closed = False

    def start(self) -> None:
        self.started = True

    def wait_ready(self, timeout_s: float) -> None:
        assert self.started

    def close(self) -> None:
        self.closed = True

    def opt_out(self, kind: str, id_: str) -> None:
        record = OptOut(kind="user" if kind == "user" else "channel", id=id_, by="test", at=T0)
        self.apply(record.key, record)

    def lift(self, kind: str, id_: str) -> None:
        self.apply(f"{kind}:{id_}", None)

    def issue(self, code: str = CODE, *, ttl_s: float = 600) -> None:
        self.apply(f"code:{code}", Code(code=code, expires_at=int((time.time() + ttl_s) * 1000), by="test"))


class Publisher:
    """Records what self-service writes, and echoes it into the registry as Kafka would."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry
        self.writes: list[tuple[str, ...]] = []

    def add(self, kind: str, id: str, *, reason: str | None, by: str, keep_history: bool = False) -> OptOut:
        self.writes.append(("add", kind, id, by, str(keep_history)))
        record = OptOut(kind="user" if kind == "user" else "channel", id=id, reason=reason, by=by, at=T0)
        if self.registry is not None:
            self.registry.apply(record.key, record)
        return record

    def retire_code(self, code: str) -> None:
        self.writes.append(("retire", code))
        if self.registry is not None:
            self.registry.apply(f"code:{code}", None)

    def flush(self, timeout_s: float = 15.0) -> None:
        self.writes.append(("flush",))


def event(
    text: str = "hello",
    *,
    kind: str = "PRIVMSG",
    channel: str = "chan",
    login: str | None = "bob",
    user_id: str | None = "42",
    room_id: str | None = "500",
    extra: dict[str, str] | None = None,
) -> ChatEvent:
    line = twitch_line(
        kind, channel, sent_at=T0, login=login, text=text, user_id=user_id, room_id=room_id, extra=extra
    )
    parsed = parse_line(line, received_at=T0 + 5, ingester="w1")
    assert parsed is not None
    return parsed


def gate_with(registry: Registry, publisher: Publisher | None = None) -> OptOutGate:
    gate = OptOutGate(registry, publisher=publisher, clock=FakeClock(100.0))
    gate.start(1.0)
    gate.notify = gate.refresh  # the worker hands it to the loop; here it runs at once
    return gate


def wait_writes(gate: OptOutGate) -> None:
    for future in gate._writes:
        future.result(timeout=10)


def test_an_opted_out_users_events_and_the_moderation_events_that_target_them_are_dropped() -> None:
    registry = Registry()
    gate = gate_with(registry)
    assert not gate.drop(event(user_id="42"))
    registry.opt_out("user", "42")
    assert gate.drop(event(user_id="42", login="bob"))
    assert not gate.drop(event(user_id="43", login="carol"))
    timeout = event("bob", kind="CLEARCHAT", login=None, user_id="42", extra={"ban-duration": "60"})
    assert timeout.tags["target-user-id"] == "42" and gate.drop(timeout)
    assert not gate.drop(event("carol", kind="CLEARCHAT", login=None, user_id="43"))
    # CLEARMSG names its target by login only: matched against the logins the user was seen with
    assert gate.drop(
        event("deleted", kind="CLEARMSG", login="bob", user_id=None, extra={"target-msg-id": "x"})
    )
    assert not gate.drop(event("deleted", kind="CLEARMSG", login="carol", user_id=None))
    assert gate.dropped == 3
    registry.lift("user", "42")  # a lift: their events are logged again
    assert not gate.drop(event(user_id="42"))
    assert registry.started and registry.closed is False


def test_channels_are_filtered_by_the_room_ids_learned_from_lines_and_a_lift_rejoins() -> None:
    registry = Registry()
    gate = gate_with(registry)
    changes: list[int] = []
    gate.channels_changed = lambda: changes.append(1)
    wanted = frozenset({"chan", "other", "quiet"})
    registry.opt_out("channel", "500")
    assert changes == [1]
    assert gate.allowed(wanted) == wanted  # no room id known yet: joined until a line tells
    assert gate.drop(event(channel="chan", room_id="500", user_id="7"))  # learns chan = 500, drops
    assert changes == [1, 1]  # the worker re-applies: chan is parted
    assert gate.allowed(wanted) == {"other", "quiet"}
    assert not gate.drop(event(channel="other", room_id="501", user_id="7"))
    assert gate.opted_out_channels(wanted) == ["chan"]
    registry.lift("channel", "500")
    assert gate.allowed(wanted) == wanted  # rejoined (the room id is remembered)
    registry.opt_out("channel", "501")  # a known room id: parted at the opt-out, without a new line
    assert gate.allowed(wanted) == {"chan", "quiet"}
    # a ROOMSTATE (no chat event) teaches a room id too
    gate.not_chat("@emote-only=0;room-id=501;slow=0 :tmi.twitch.tv ROOMSTATE #quiet")
    assert gate.room_ids["quiet"] == "501" and gate.allowed(wanted) == {"chan"}


def test_roomstate_and_command_parsing() -> None:
    assert roomstate("@room-id=9;slow=0 :tmi.twitch.tv ROOMSTATE #Chan") == ("chan", "9")
    assert roomstate(":tmi.twitch.tv ROOMSTATE #chan") is None
    assert roomstate("@room-id=9 :u!u@u PRIVMSG #chan :ROOMSTATE") is None
    assert roomstate("@slow=0 :tmi.twitch.tv ROOMSTATE #chan") is None
    assert parse_command(f"!chatlog optout {CODE}", "!chatlog") is not None
    found = parse_command(f"!chatlog  OPTOUT {CODE.upper()} Channel", "!chatlog")
    assert found is not None and found.code == CODE and found.channel
    assert parse_command(f"!chatlog optout {CODE} please", "!chatlog") is None
    assert parse_command(f"!chatlog optout {CODE}", "!log") is None
    assert parse_command("!chatlog optout 0000000l", "!chatlog") is None  # not a code's alphabet
    assert parse_command("!chatlog optout", "!chatlog") is None
    assert is_broadcaster(event(user_id="500", room_id="500"))
    assert is_broadcaster(event(extra={"badges": "broadcaster/1,subscriber/12"}))
    assert not is_broadcaster(event(extra={"badges": "moderator/1"}))


def test_self_service_registers_the_senders_opt_out_once_retires_the_code_and_drops_the_line() -> None:
    registry = Registry()
    publisher = Publisher(registry)
    gate = gate_with(registry, publisher)
    registry.issue()
    assert not gate.drop(event(f"!chatlog optout {CODE}x", user_id="42"))  # not a command: logged
    assert gate.drop(event(f"!chatlog optout {CODE}", user_id="42"))
    assert gate.drop(event("my next line", user_id="42"))  # enforced here at once
    wait_writes(gate)
    assert publisher.writes == [
        ("add", "user", "42", f"code:{CODE}", "False"),
        ("flush",),
        ("retire", CODE),
        ("flush",),
    ]
    assert registry.users() == {"42"} and registry.code(CODE) is None
    # the same line read again (the other copy of a redundant pair, a repeat): dropped, nothing written
    assert gate.drop(event(f"!chatlog optout {CODE}", user_id="43", login="carol"))
    assert len(publisher.writes) == 4 and gate.registered == 1


def test_an_unknown_or_expired_code_is_a_chat_line_and_registers_nothing() -> None:
    registry = Registry()
    publisher = Publisher(registry)
    gate = gate_with(registry, publisher)
    assert not gate.drop(event(f"!chatlog optout {CODE}"))
    registry.issue(ttl_s=-1)
    assert not gate.drop(event(f"!chatlog optout {CODE}"))
    assert publisher.writes == [] and registry.users() == frozenset() and gate.dropped == 0


def test_a_code_retired_by_the_other_ingester_still_makes_the_line_a_command() -> None:
    registry = Registry()
    publisher = Publisher()  # the other ingester wrote: this one only reads the records
    gate = gate_with(registry, publisher)
    registry.issue()
    registry.opt_out("user", "42")
    registry.apply(f"code:{CODE}", None)
    assert gate.drop(event(f"!chatlog optout {CODE}", user_id="42"))
    assert gate.drop(event(f"!chatlog optout {CODE}", user_id="77"))  # retired: dropped, not registered
    assert publisher.writes == [] and registry.users() == {"42"}


def test_a_channel_opt_out_by_chat_needs_the_broadcaster() -> None:
    registry = Registry()
    publisher = Publisher(registry)
    gate = gate_with(registry, publisher)
    registry.issue()
    line = f"!chatlog optout {CODE} channel"
    assert not gate.drop(event(line, user_id="42", room_id="500", extra={"badges": "moderator/1"}))
    assert gate.drop(event(line, user_id="42", room_id="500", extra={"badges": "broadcaster/1"}))
    wait_writes(gate)
    assert publisher.writes[0] == ("add", "channel", "500", f"code:{CODE}", "False")
    assert registry.channels() == {"500"} and gate.allowed({"chan", "x"}) == {"x"}


def test_a_failed_publish_is_counted_and_the_local_opt_out_expires() -> None:
    registry = Registry()

    class Down(Publisher):
        def add(
            self, kind: str, id: str, *, reason: str | None, by: str, keep_history: bool = False
        ) -> OptOut:
            raise RuntimeError("Kafka is down")

    clock = FakeClock(100.0)
    gate = OptOutGate(registry, publisher=Down(), clock=clock)
    gate.start(1.0)
    registry.issue()
    assert gate.drop(event(f"!chatlog optout {CODE}", user_id="42"))
    wait_writes(gate)
    assert gate.publish_errors == 1
    assert gate.drop(event("still enforced locally", user_id="42"))
    clock.advance(600)
    gate.refresh()
    assert not gate.drop(event("the registry never had it", user_id="42"))


def test_client_id_tags_give_a_plain_irc_line_twitch_ids() -> None:
    parse = with_client_id_tags(parse_line)
    line = "@+user-id=42;+room-id=500;+badges=broadcaster/1;msgid=m1 :bob!b@h PRIVMSG #chan :hi"
    got = parse(line, received_at=T0, ingester="w")
    assert got is not None and (got.user_id, got.channel_id) == ("42", "500") and is_broadcaster(got)
    bad = parse("@+user-id=4x2;msgid=m2 :bob!b@h PRIVMSG #chan :hi", received_at=T0, ingester="w")
    assert bad is not None and bad.user_id is None
    plain = parse_line(line, received_at=T0, ingester="w")
    assert plain is not None and plain.user_id is None


def test_the_producer_drops_what_the_gate_drops_and_counts_it() -> None:
    registry = Registry()
    gate = gate_with(registry)
    registry.opt_out("user", "42")
    kafka = FakeProducer()
    settings = IngestSettings(topic_messages="t.messages")
    producer = IngestProducer(settings, "w1", producer=kafka, gate=gate)
    kafka.default_cb = producer._on_delivery
    lines = [
        twitch_line("PRIVMSG", "chan", sent_at=T0, login="bob", text="a", user_id="42", room_id="500"),
        twitch_line("PRIVMSG", "chan", sent_at=T0, login="carol", text="b", user_id="43", room_id="500"),
        "@room-id=500 :tmi.twitch.tv ROOMSTATE #chan",
    ]
    producer.on_lines(lines, T0 + 5)
    sent = [chat_event.decode(m.value() or b"") for m in kafka.sent_to("t.messages")]
    assert [e.user_login for e in sent] == ["carol"]
    assert gate.dropped == 1 and producer.counts.lines == 3 and producer.counts.events == 1
    assert gate.room_ids == {"chan": "500"}


def test_the_worker_parts_an_opted_out_channel_and_rejoins_it_on_a_lift() -> None:
    settings = IngestSettings(
        ingest_worker_id="w1", topic_channels=CHANNELS, topic_messages="t.messages", topic_status="t.status",
        topic_coverage="t.coverage", topic_deadletter="t.dl", ingest_heartbeat_s=0.05,
        ingest_shutdown_drain_s=0.2,
    )  # fmt: skip
    registry = Registry()
    gate = OptOutGate(registry)
    kafka = FakeProducer()
    producer = IngestProducer(settings, "w1", producer=kafka, gate=gate)
    kafka.default_cb = producer._on_delivery
    group = FakeConsumer()
    membership = Membership(
        {}, CHANNELS, loader_conf={}, handoff_timeout_s=60, consumer_factory=lambda _c: cast(Consumer, group)
    )
    pool, metrics = PoolDouble(producer.on_lines), MetricsDouble()
    worker = Worker(
        settings, producer=producer, pool=pool, membership=membership, watch=WatchDouble(),
        coverage=CoverageTracker(0, "w1", T0), nothing_assigned=lambda _m: True,
        serve_metrics=metrics.serve, consent=gate,
    )  # fmt: skip
    room = twitch_line("PRIVMSG", "a", sent_at=T0, login="bob", text="hi", user_id="7", room_id="500")

    async def main() -> int:
        stop = asyncio.Event()
        run = asyncio.create_task(worker.run(stop))
        try:
            await eventually(lambda: registry.started, 5, "the registry followed")
            group.assign(CHANNELS, [1])
            group.feed(
                *(FakeMessage(CHANNELS, b"{}", ch.encode(), partition=1) for ch in ("a", "b")),
                FakeMessage.end_of_partition(CHANNELS, 1),
            )
            await eventually(lambda: pool.wanted == {"a", "b"}, 5, "both channels joined")
            pool.on_lines([room], T0)  # the worker learns a = 500
            registry.opt_out("channel", "500")  # on the registry's thread in production
            await eventually(lambda: pool.wanted == {"b"}, 5, "the opted-out channel parted")
            pool.on_lines([room], T0)
            registry.lift("channel", "500")
            await eventually(lambda: pool.wanted == {"a", "b"}, 5, "rejoined after the lift")
            labels = {"worker": "w1", "replica": "0"}
            value = metrics.registries[0].get_sample_value("chatlog_ingest_optout_dropped_total", labels)
            assert value == 1
            stop.set()
            return await asyncio.wait_for(run, 15)
        finally:
            run.cancel()
            membership.close(timeout=5)

    assert asyncio.run(asyncio.wait_for(main(), 30)) == 0
    assert registry.closed
    texts = [chat_event.decode(m.value() or b"").text for m in kafka.sent_to("t.messages")]
    assert texts == ["hi"]  # the second line (after the opt-out) never reached Kafka


@pytest.mark.parametrize("word", ["!chatlog", "?log"])
def test_the_command_word_is_a_setting(word: str) -> None:
    registry = Registry()
    publisher = Publisher(registry)
    gate = OptOutGate(registry, command_word=word, publisher=publisher)
    gate.start(1.0)
    registry.issue()
    assert gate.drop(event(f"{word} optout {CODE}"))
    wait_writes(gate)
    assert registry.users() == {"42"}


@pytest.mark.parametrize("word", ["!justlog", "!rustlog"])
def test_the_words_justlogs_and_rustlogs_frontends_tell_users_to_type_are_accepted(word: str) -> None:
    # their Optout.tsx: `!justlog optout <code>` / `!rustlog optout <code>`; CHATLOG_OPTOUT_COMMAND_ALIASES
    aliases = ConsentSettings().optout_aliases()
    assert aliases == ("!justlog", "!rustlog")
    registry = Registry()
    publisher = Publisher(registry)
    gate = OptOutGate(registry, command_word="!chatlog", aliases=aliases, publisher=publisher)
    gate.start(1.0)
    registry.issue()
    assert gate.drop(event(f"{word} optout {CODE}"))
    wait_writes(gate)
    assert registry.users() == {"42"}
    assert ConsentSettings(optout_command_aliases="").optout_aliases() == ()
    assert parse_command(f"{word} optout {CODE}", ("!chatlog",)) is None
