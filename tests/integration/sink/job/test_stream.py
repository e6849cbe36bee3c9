"""The sink on the real stack: Kafka -> Spark -> Cassandra, duplicates, dead letters, backfill."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import pytest

from core.errors import ChatlogError
from schemas.chat_event import InvalidEvent, decode
from sink.job import backfill, stream
from sink.job.progress import Metrics
from sink.settings import SinkSettings
from tests.integration.sink.records import (
    count,
    dead_letters,
    make_events,
    message_ids,
    produce,
    uuids,
)
from tests.uvicorn_thread import free_port

pytestmark = pytest.mark.integration


def test_each_distinct_valid_event_becomes_one_row_and_bad_records_dead_letters(
    sink_settings: SinkSettings, spark_session: Any
) -> None:
    produced = produce(sink_settings, make_events(1500))
    port = free_port()
    metrics = Metrics(port)
    try:
        totals = stream.run(sink_settings, available_now=True, metrics=metrics)
        scraped = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        metrics.close()

    ids = message_ids(sink_settings)
    assert sorted(ids) == sorted(uuids(produced.events))
    timeouts = [e for e in produced.events.values() if e.kind == "CLEARCHAT"]
    assert count(sink_settings, "user") == produced.with_user > len(timeouts) > 0

    letters = dead_letters(sink_settings)
    assert {h["source"]: v for v, h in letters} == produced.bad
    assert all(h["reason"] for _v, h in letters)
    for value, headers in letters:  # the reason is the contract validator's own, word for word
        with pytest.raises(InvalidEvent) as raised:
            decode(value or b"")
        assert headers["reason"] == str(raised.value)
    reasons = {h["reason"] for _v, h in letters}
    assert any(r.startswith("not JSON") for r in reasons)
    assert any("missing required field `message_id`" in r for r in reasons)

    assert totals.events_in == produced.records
    assert totals.invalid == len(produced.bad)
    assert totals.duplicates == produced.duplicates
    assert totals.written.events == len(produced.events)
    assert f"chatlog_sink_events_in_total {float(produced.records)}" in scraped
    assert f"chatlog_sink_duplicates_dropped_total {float(produced.duplicates)}" in scraped


def test_replaying_the_topic_again_adds_no_row(
    sink_settings: SinkSettings, spark_session: Any, tmp_path: Any
) -> None:
    """A second sink with a new checkpoint reads everything again: the rows stay exactly the same."""
    produced = produce(sink_settings, make_events(300), bad_every=10**9)
    stream.run(sink_settings, available_now=True)
    again = sink_settings.model_copy(update={"sink_checkpoint": str(tmp_path / "second")})
    totals = stream.run(again, available_now=True)
    assert totals.written.events == len(produced.events)
    assert sorted(message_ids(sink_settings)) == sorted(uuids(produced.events))


def test_backfill_into_a_fresh_keyspace_gives_the_same_rows(
    sink_settings: SinkSettings, spark_session: Any, unique: str
) -> None:
    from core.cql import connect
    from lab.bench.scratch import drop_keyspaces
    from store.scan import stored_lines

    t0 = int(time.time() * 1000) - 3_600_000
    first = produce(sink_settings, make_events(600, tag="a"), timestamp_ms=t0)
    second = produce(sink_settings, make_events(200, tag="b"), timestamp_ms=t0 + 1_800_000)
    stream.run(sink_settings, available_now=True)

    fresh = sink_settings.model_copy(update={"cassandra_keyspace": f"b{unique}"})
    try:
        result = backfill.run(fresh, t0)
        rows = {}
        for ks in (sink_settings.cassandra_keyspace, fresh.cassandra_keyspace):
            cluster, session = connect(sink_settings)
            try:
                for copy in ("channel", "user"):  # each line as stored: time, id, line, received, split, user
                    rows[ks + copy] = sorted(map(repr, stored_lines(session, ks, copy)))
            finally:
                cluster.shutdown()
        assert (
            rows[sink_settings.cassandra_keyspace + "channel"] == rows[fresh.cassandra_keyspace + "channel"]
        )
        assert rows[sink_settings.cassandra_keyspace + "user"] == rows[fresh.cassandra_keyspace + "user"]
        assert len(rows[fresh.cassandra_keyspace + "channel"]) == len(first.events) + len(second.events)
        assert result.read == first.records + second.records
        assert result.invalid == len(first.bad) + len(second.bad)
        assert result.duplicates == first.duplicates + second.duplicates
        assert result.written.events == len(first.events) + len(second.events)
        assert "dropped" in result.summary() and f"read {result.read} events" in result.summary()

        bounded = sink_settings.model_copy(update={"cassandra_keyspace": f"c{unique}"})
        part = backfill.run(bounded, t0, t0 + 60_000)
        assert part.written.events == len(first.events)
        assert sorted(message_ids(bounded)) == sorted(uuids(first.events))
    finally:
        drop_keyspaces(sink_settings, [f"b{unique}", f"c{unique}"])


def test_cassandra_unreachable_fails_loudly_and_a_restart_catches_up(
    sink_settings: SinkSettings, spark_session: Any
) -> None:
    produced = produce(sink_settings, make_events(400), bad_every=10**9)
    down = sink_settings.model_copy(
        update={"cassandra_port": free_port(), "sink_cassandra_retry_s": 3, "sink_apply_schema": False}
    )
    started = time.monotonic()
    with pytest.raises(ChatlogError, match=r"^checking the schema of keyspace \S+ still failing after 3s"):
        stream.run(down, available_now=True)
    assert time.monotonic() - started < 120
    assert count(sink_settings) == 0
    stream.run(sink_settings, available_now=True)
    assert sorted(message_ids(sink_settings)) == sorted(uuids(produced.events))


def test_backfill_from_a_time_after_which_most_partitions_are_quiet(
    sink_settings: SinkSettings, spark_session: Any
) -> None:
    """Kafka-keyed by channel, a quiet channel's partition has nothing after --from: the backfill reads
    the partitions that do, and a range in which no partition has anything is an empty backfill."""
    t0 = int(time.time() * 1000) - 3_600_000
    produce(sink_settings, make_events(200, channels=7, tag="old"), timestamp_ms=t0, bad_every=10**9)
    late = make_events(50, channels=1, tag="new")  # one channel: one partition of the four
    recent = produce(sink_settings, late, timestamp_ms=t0 + 600_000)

    result = backfill.run(sink_settings, t0 + 300_000)
    assert result.read == recent.records
    assert result.written.events == len(late)
    assert sorted(message_ids(sink_settings)) == sorted(uuids(e.message_id for e in late))

    between = backfill.run(sink_settings, t0 + 1, t0 + 300_000)
    assert (between.read, between.written.events) == (0, 0)
    after = backfill.run(sink_settings, t0 + 900_000)
    assert (after.read, after.written.events) == (0, 0)
    assert "read 0 events" in after.summary()


def test_backfill_of_a_missing_topic_is_one_line(sink_settings: SinkSettings) -> None:
    missing = sink_settings.model_copy(update={"topic_messages": "no.such.topic.anywhere"})
    with pytest.raises(ChatlogError, match=r"^topic no\.such\.topic\.anywhere does not exist"):
        backfill.run(missing, 0)
