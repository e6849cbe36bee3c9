"""The producer's hot-path logic against a test double of the librdkafka producer (pure; no Kafka)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError

from core.testing import FakeMessage, FakeProducer
from ingest.producer import IngestProducer
from ingest.settings import IngestSettings
from schemas import chat_event

PRIVMSG = "@id=m{n};tmi-sent-ts=1700000000000 :u!u@u PRIVMSG #chan{c} :hello {n}"


def _make(fake: FakeProducer, **overrides: Any) -> IngestProducer:
    settings = IngestSettings(topic_messages="m", topic_deadletter="dl", topic_status="st", **overrides)
    ingest = IngestProducer(settings, "w1", producer=fake)
    fake.default_cb = ingest._on_delivery  # what producer_config() wires into librdkafka
    return ingest


def _lines(n: int, channels: int = 3) -> list[str]:
    return [PRIVMSG.format(n=i, c=i % channels) for i in range(n)]


def test_every_line_is_produced_keyed_by_channel() -> None:
    fake = FakeProducer()
    ingest = _make(fake)
    ingest.on_lines(_lines(10), 1_700_000_000_500)
    events = [chat_event.decode(m.value() or b"") for m in fake.produced]
    assert [m.key() for m in fake.produced] == [f"chan{i % 3}".encode() for i in range(10)]
    assert {m.topic() for m in fake.produced} == {"m"}
    assert [e.message_id for e in events] == [f"m{i}" for i in range(10)]
    assert all(e.ingester == "w1" and e.received_at == 1_700_000_000_500 for e in events)
    assert ingest.counts.lines == 10 and ingest.counts.events == 10
    assert ingest.counts.delivered == 10  # on_lines polls once per batch
    assert sum(ingest.latency.counts) == 10


def test_full_queue_waits_and_drops_nothing() -> None:
    fake = FakeProducer(capacity=3)
    ingest = _make(fake)
    ingest.on_lines(_lines(20), 1)
    ingest.flush(1)
    assert len(fake.delivered) == 20
    assert [chat_event.decode(m.value() or b"").message_id for m in fake.delivered] == [
        f"m{i}" for i in range(20)
    ]
    assert ingest.counts.queue_full_waits > 0
    assert ingest.counts.events == 20


def test_not_chat_lines_are_counted_not_produced() -> None:
    fake = FakeProducer()
    ingest = _make(fake)
    ingest.on_lines([":irc.local 001 me :Welcome", ":me!u@h JOIN #a", "PING :x"], 1)
    assert fake.produced == [] and ingest.counts.not_chat == 3 and ingest.counts.lines == 3


def test_malformed_lines_are_dead_lettered_and_logged_once_per_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeProducer()
    ingest = _make(fake)
    long_channel = "a" * 201  # past the contract's bound (a bad tmi-sent-ts is no longer malformed)
    bad = [f"@id=x{i} :u!u@u PRIVMSG #{long_channel} :hi" for i in range(5)] + ["PRIVMSG nochannel :x"]
    with caplog.at_level(logging.WARNING, logger="ingest.producer"):
        ingest.on_lines([*bad, PRIVMSG.format(n=1, c=1)], 1)
        ingest.poll()
    dead = [m for m in fake.produced if m.topic() == "dl"]
    assert [m.value() for m in dead] == [line.encode() for line in bad]
    headers = dict(dead[0].headers() or [])
    assert headers["source"] == b"irc:w1" and b"channel name longer than 200" in headers["reason"]
    assert ingest.counts.malformed == 6 and ingest.counts.dead_lettered == 6 and ingest.counts.events == 1
    logged = [r.getMessage() for r in caplog.records if "malformed line" in r.getMessage()]
    assert len(logged) == 2  # one per reason kind, with a sample
    assert "sample:" in logged[0] and "x0" in logged[0]


def test_a_parser_crash_is_dead_lettered_like_a_malformed_line() -> None:
    def parse(line: str, **kw: Any) -> chat_event.ChatEvent | None:
        if "boom" in line:
            raise IndexError("bug")
        return None

    fake = FakeProducer()
    ingest = IngestProducer(IngestSettings(topic_deadletter="dl"), "w1", producer=fake, parse=parse)
    ingest.on_lines(["PRIVMSG #a :boom", "PING :x"], 1)
    ingest.poll()
    [dead] = fake.produced
    assert dead.topic() == "dl" and dead.value() == b"PRIVMSG #a :boom"
    assert dict(dead.headers() or [])["reason"] == b"parser failed: IndexError: bug"
    assert ingest.counts.malformed == 1 and ingest.counts.not_chat == 1


def test_retriable_delivery_failure_is_produced_again_with_the_same_record() -> None:
    failures = {"n": 0}

    def outcome(msg: FakeMessage, n: int) -> KafkaError | None:
        if msg.topic() == "m" and failures["n"] < 2:
            failures["n"] += 1
            return KafkaError(KafkaError._MSG_TIMED_OUT)
        return None

    fake = FakeProducer(outcome=outcome)
    ingest = _make(fake)
    ingest.on_lines(_lines(1), 1)
    ingest.flush(1)
    [first, second, third] = fake.produced
    assert first.value() == second.value() == third.value() and first.key() == third.key()
    assert fake.delivered == [third]
    assert (ingest.counts.delivery_errors, ingest.counts.retries, ingest.counts.delivered) == (2, 2, 1)


def test_delivery_failing_every_attempt_goes_to_dead_letter(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeProducer(
        outcome=lambda m, n: KafkaError(KafkaError._MSG_TIMED_OUT) if m.topic() == "m" else None
    )
    ingest = _make(fake, ingest_delivery_attempts=3)
    with caplog.at_level(logging.ERROR, logger="ingest.producer"):
        ingest.on_lines(_lines(1), 1)
        ingest.flush(1)
    to_messages = [m for m in fake.produced if m.topic() == "m"]
    [dead] = [m for m in fake.produced if m.topic() == "dl"]
    assert len(to_messages) == 3
    assert dead.value() == to_messages[0].value()
    assert b"after 3 attempt(s)" in dict(dead.headers() or [])["reason"]
    assert ingest.counts.dead_lettered == 1
    assert any("dead-lettered" in r.getMessage() for r in caplog.records)


def test_permanent_delivery_failure_is_dead_lettered_without_retry() -> None:
    fake = FakeProducer(
        outcome=lambda m, n: KafkaError(KafkaError.MSG_SIZE_TOO_LARGE) if m.topic() == "m" else None
    )
    ingest = _make(fake)
    ingest.on_lines(_lines(1), 1)
    ingest.flush(1)
    assert [m.topic() for m in fake.produced] == ["m", "dl"]
    assert ingest.counts.retries == 0 and ingest.counts.dead_lettered == 1


def test_status_records_use_their_own_callback_and_failures_only_count() -> None:
    fake = FakeProducer(outcome=lambda m, n: KafkaError(KafkaError._MSG_TIMED_OUT))
    ingest = _make(fake)
    ingest.produce_status("r0/w1", b"{}")
    ingest.produce_status("r0/w1", None)
    ingest.flush(1)
    assert [m.key() for m in fake.produced] == [b"r0/w1", b"r0/w1"]
    assert ingest.counts.status_errors == 2 and ingest.counts.retries == 0


def test_a_huge_malformed_line_is_dead_lettered_cut_to_a_deliverable_size() -> None:
    from ingest.producer import _DEAD_LETTER_MAX_BYTES

    fake = FakeProducer()
    ingest = _make(fake)
    ingest.on_lines(["@id=x :a!a@a PRIVMSG #" + "c" * 600_000 + " :hi"], 1)
    ingest.poll()
    (dead,) = [m for m in fake.produced if m.topic() == "dl"]
    assert len(dead.value() or b"") == _DEAD_LETTER_MAX_BYTES
    assert b"cut to its first 262144 of" in dict(dead.headers() or [])["reason"]
