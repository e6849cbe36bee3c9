"""How the registry folds records (no Kafka: OptOutRegistry.apply, as its reader thread calls it)."""

from __future__ import annotations

import time

from consent.records import Code, OptOut, Value
from consent.registry import OptOutRegistry
from core.settings import KafkaSettings


def registry() -> OptOutRegistry:
    return OptOutRegistry(KafkaSettings(), "unused")


def optout(kind: str, id_: str) -> OptOut:
    return OptOut(kind="user" if kind == "user" else "channel", id=id_, by="t", at=1)


def test_opt_outs_and_tombstones_fold_by_key() -> None:
    r = registry()
    r.apply("user:1", optout("user", "1"))
    r.apply("channel:2", optout("channel", "2"))
    r.apply("user:3", optout("user", "3"))
    assert r.users() == {"1", "3"} and r.channels() == {"2"}
    assert r.user_out("1") and not r.user_out(None) and r.channel_out("2") and not r.channel_out("1")
    r.apply("user:1", None)
    assert r.users() == {"3"} and r.optout("user", "1") is None
    assert r.optout("user", "3") == optout("user", "3")
    assert [o.id for o in r.optouts()] == ["2", "3"]


def test_catch_up_publishes_once_per_batch() -> None:
    r = registry()
    r.apply("user:1", optout("user", "1"), publish=False)
    assert r.users() == frozenset()
    r.publish()
    assert r.users() == {"1"}


def test_codes_expire_and_retire() -> None:
    r = registry()
    now = int(time.time() * 1000)
    r.apply("code:abcdefgh", Code(code="abcdefgh", expires_at=now + 60_000, by="t"))
    r.apply("code:bcdefghj", Code(code="bcdefghj", expires_at=now - 1, by="t"))
    assert r.code("abcdefgh") is not None and r.code("bcdefghj") is None and r.code("zzzzzzzz") is None
    r.apply("code:abcdefgh", None)
    assert r.code("abcdefgh") is None
    assert r.users() == frozenset()


def test_subscribers_get_every_record_and_a_failing_one_stops_nothing() -> None:
    r = registry()
    seen: list[tuple[str, Value | None]] = []

    def broken(_key: str, _value: Value | None) -> None:
        raise RuntimeError("boom")

    r.subscribe(broken)
    r.subscribe(lambda k, v: seen.append((k, v)))
    r.apply("user:1", optout("user", "1"))
    r.apply("user:1", None)
    assert seen == [("user:1", optout("user", "1")), ("user:1", None)]
