"""The opt-out registry on the real Kafka: a registry follows adds and lifts within seconds, a late one
reads the whole topic, self-service codes, and one line when Kafka or the topic is not there."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from consent.publish import OptOutPublisher
from consent.records import Value
from consent.registry import OptOutRegistry
from consent.settings import ConsentSettings
from core.errors import ChatlogError

pytestmark = pytest.mark.integration


def within(seconds: float, check: Callable[[], bool]) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds}s"
        time.sleep(0.01)
    return time.monotonic() - started


def test_a_registry_follows_adds_and_lifts_within_seconds(optout_settings: ConsentSettings) -> None:
    publisher = OptOutPublisher(optout_settings)
    publisher.add("user", "11", reason="first", by="test")
    registry = OptOutRegistry(optout_settings, optout_settings.topic_optout)
    seen: list[tuple[str, Value | None]] = []
    registry.subscribe(lambda k, v: seen.append((k, v)))
    registry.start()
    try:
        registry.wait_ready(20)
        assert registry.users() == {"11"}  # read from the beginning before ready
        assert registry.ready and registry.error is None
        added = publisher.add("channel", "22", reason=None, by="test", keep_history=True)
        took = within(5, lambda: registry.channel_out("22"))
        assert registry.optout("channel", "22") == added
        publisher.remove("user", "11", by="test")
        took = max(took, within(5, lambda: not registry.user_out("11")))
        print(f"registry followed an add and a lift in {took * 1000:.0f} ms at most")
        code = publisher.issue_code(by="test", ttl_s=60)
        within(5, lambda: registry.code(code.code) == code)
        publisher.retire_code(code.code)
        within(5, lambda: registry.code(code.code) is None)
        assert [k for k, _v in seen] == [
            "user:11",
            "channel:22",
            "user:11",
            f"code:{code.code}",
            f"code:{code.code}",
        ]
    finally:
        registry.close()

    late = OptOutRegistry(optout_settings, optout_settings.topic_optout)
    late.start()
    try:
        late.wait_ready(20)
        assert late.users() == frozenset() and late.channels() == {"22"}
        assert [o.id for o in late.optouts()] == ["22"]
    finally:
        late.close()


def test_kafka_down_or_no_topic_is_one_line(optout_settings: ConsentSettings) -> None:
    down = optout_settings.model_copy(update={"kafka_bootstrap_servers": "127.0.0.1:1"})
    registry = OptOutRegistry(down, down.topic_optout)
    registry.start()
    try:
        with pytest.raises(ChatlogError, match="CHATLOG_KAFKA_BOOTSTRAP_SERVERS") as caught:
            registry.wait_ready(4)
        assert "\n" not in str(caught.value)
    finally:
        registry.close()
    missing = OptOutRegistry(optout_settings, "no.such.optout.topic")
    missing.start()
    try:
        with pytest.raises(ChatlogError, match=r"no\.such\.optout\.topic does not exist"):
            missing.wait_ready(3)
    finally:
        missing.close()
