"""The writer against the real Cassandra: records Cassandra cannot take are dead-lettered at once,
never retried into a crash loop, and the valid records around them are written."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings
from sink.writer import partition as writer
from store.write import close_sessions
from tests.integration.sink.records import count, dead_letters, make_events

pytestmark = pytest.mark.integration

HUGE_CHANNEL = "c" * 100_000  # past Cassandra's 64 KiB partition-key limit


@pytest.fixture(autouse=True)
def _fresh_sessions() -> Iterator[None]:
    yield
    close_sessions()


def _records(settings: SinkSettings, bad: list[ChatEvent]) -> tuple[list[tuple[bytes, int, int]], int]:
    good = make_events(300, channels=3)
    events = good[:100] + bad + good[100:]
    return [(encode(e), 0, offset) for offset, e in enumerate(events)], len(good)


def _bad(**fields: object) -> ChatEvent:
    base = make_events(1, channels=1, tag="bad-")[0]
    return msgspec.structs.replace(base, **fields)


def test_records_past_the_contract_bounds_are_dead_lettered_with_the_reason(
    sink_settings: SinkSettings,
) -> None:
    bad = [_bad(channel=HUGE_CHANNEL), _bad(sent_at=999_999_999_999_999), _bad(user_id="9" * 65)]
    records, good = _records(sink_settings, bad)

    started = time.monotonic()
    stats = writer.write_partition(records, sink_settings)

    assert time.monotonic() - started < 10
    assert (stats.events, stats.deadletters) == (good, 3)
    assert count(sink_settings, "channel") == good
    got = sorted((h["source"], h["reason"]) for _, h in dead_letters(sink_settings))
    topic = sink_settings.topic_messages
    assert [s for s, _ in got] == [f"{topic}/0/100", f"{topic}/0/101", f"{topic}/0/102"]
    assert "length <= 200" in got[0][1] and "$.channel" in got[0][1]
    assert "<= 253402300799999" in got[1][1] and "$.sent_at" in got[1][1]
    assert "length <= 64" in got[2][1] and "$.user_id" in got[2][1]


class _Unbounded(msgspec.Struct, kw_only=True):
    """The chat event without the contract's bounds: what an older sink, or any writer that trusted its
    input, would hand to Cassandra."""

    message_id: str
    kind: str
    channel: str
    channel_id: str | None = None
    user_login: str | None = None
    user_id: str | None = None
    display_name: str | None = None
    text: str | None = None
    is_action: bool = False
    sent_at: int
    received_at: int
    tags: dict[str, str] = msgspec.field(default_factory=dict)
    raw: str
    ingester: str | None = None


@pytest.fixture
def unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's validation without the contract's bounds, so that the records reach the driver."""
    monkeypatch.setattr(writer, "decode", msgspec.json.Decoder(_Unbounded).decode)


@pytest.mark.usefixtures("unbounded")
def test_a_write_cassandra_rejects_as_invalid_is_dead_lettered_at_once_not_retried(
    sink_settings: SinkSettings,
) -> None:
    assert sink_settings.sink_cassandra_retry_s >= 20
    # a user row whose partition key (channel key + user key) is past 64 KiB, each part under it: the
    # driver sends it, Cassandra answers InvalidRequest (0x2200). (A message id of any length is a uuid.)
    records, good = _records(sink_settings, [_bad(channel_id="c" * 40_000, user_id="u" * 40_000)])

    started = time.monotonic()
    stats = writer.write_partition(records, sink_settings)

    assert time.monotonic() - started < 10  # not retried for sink_cassandra_retry_s, then failed
    assert (stats.events, stats.deadletters, stats.retries) == (good, 1, 0)
    assert count(sink_settings, "user") == good  # the rows Cassandra took stay (idempotent)
    ((value, headers),) = dead_letters(sink_settings)
    assert value == records[100][0]
    assert headers["source"] == f"{sink_settings.topic_messages}/0/100"
    assert headers["reason"].startswith("Cassandra rejected it: InvalidRequest"), headers["reason"]


@pytest.mark.usefixtures("unbounded")
def test_a_record_the_driver_cannot_serialize_is_dead_lettered(sink_settings: SinkSettings) -> None:
    # a partition-key part (the channel key: its id) past 64 KiB: the driver cannot even pack the routing key
    records, good = _records(sink_settings, [_bad(channel_id=HUGE_CHANNEL), _bad(sent_at=2**63)])

    started = time.monotonic()
    stats = writer.write_partition(records, sink_settings)

    assert time.monotonic() - started < 10
    assert (stats.events, stats.deadletters) == (good, 2)
    assert count(sink_settings, "channel") == good
    reasons = sorted(h["reason"] for _, h in dead_letters(sink_settings))
    assert all(r.startswith("cannot be written to Cassandra: ") for r in reasons), reasons


def test_a_task_whose_input_spark_cuts_short_writes_nothing(
    sink_settings: SinkSettings, spark_session: Any
) -> None:
    """When Spark's JVM fails while it feeds a task (a Kafka read that fails mid-partition, as a broker's
    failover does), pyspark ends the task's input quietly: the task must not write the part it got, or the
    task's next attempt writes those lines again, cut into other blocks (the same messages in two rows)."""
    from pyspark.sql import functions as F

    from sink.job.write import write_dataframe

    events = make_events(3_000, channels=3)
    schema = "value binary, partition int, offset long"
    rows = spark_session.createDataFrame([(encode(e), 0, i) for i, e in enumerate(events)], schema).coalesce(
        1
    )
    failing = F.when(F.col("offset") == 2_500, F.raise_error(F.lit("Could not read records (a test)")))
    cut = rows.select("value", "partition", failing.otherwise(F.col("offset")).alias("offset"))

    with pytest.raises(Exception, match="Could not read records"):
        write_dataframe(cut, sink_settings, dead_letters=False, recent=b"")

    deadline = time.monotonic() + 8  # the task's Python worker outlives the failed job by a moment
    while time.monotonic() < deadline:
        assert count(sink_settings, "channel") == 0, "a task wrote the part of its input it got"
        time.sleep(0.5)
    write_dataframe(rows, sink_settings, dead_letters=False, recent=b"")  # the same input, whole: written
    assert count(sink_settings, "channel") == len(events)
