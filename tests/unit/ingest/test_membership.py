"""The wanted-set arithmetic of bucket ownership, hand-off overlap and loss (pure, injected time)."""

from __future__ import annotations

from core.compacted import FOLLOW_FETCH_WAIT_MS
from core.settings import KafkaSettings
from ingest.membership import HELD_ELSEWHERE_S, BucketTable, consumer_config, loader_config


def _table(loaded: dict[int, str], handoff_timeout_s: float = 10) -> BucketTable:
    """A table that owns the buckets of ``loaded``, each read to its end: bucket -> its channels (space
    separated)."""
    table = BucketTable(handoff_timeout_s=handoff_timeout_s)
    for bucket, channels in loaded.items():
        logins = channels.split()
        table.assign({bucket: len(logins)})
        for offset, ch in enumerate(logins):
            table.load(bucket, offset + 1, (ch, True))
        assert bucket not in table.loading
    return table


def test_a_loading_bucket_contributes_nothing_until_its_end_is_read() -> None:
    table = BucketTable(handoff_timeout_s=10)
    table.assign({1: 3})
    assert not table.load(1, 1, ("a", True))
    assert not table.load(1, 2, ("b", True))
    table.apply(1, "c", True)  # the member's, from offset 3 on: held until the read gets there
    table.apply(1, "b", False)
    assert table.wanted() == frozenset()
    assert table.snapshot().loading == (1,)
    assert table.load(1, 3, ("a", False))  # the end: counts from now on
    assert table.wanted() == {"c"}
    assert table.snapshot().loading == ()
    assert not table.load(1, 4, ("late", True)), "a loaded bucket takes nothing from a read"
    assert table.wanted() == {"c"}


def test_a_read_ends_at_a_partition_end_past_the_last_record() -> None:
    table = BucketTable(handoff_timeout_s=10)
    table.assign({2: 6, 3: None})
    assert table.snapshot().loading == (2,), "an empty bucket counts at once"
    table.load(2, 2, ("a", True))  # offsets 2..5 compacted away
    assert not table.load(2, 5)
    assert table.load(2, 6)
    assert table.wanted() == {"a"}


def test_tail_records_add_and_remove_channels() -> None:
    table = _table({0: "a"})
    v = table.version
    table.apply(0, "b", True)
    assert table.wanted() == {"a", "b"} and table.version > v
    v = table.version
    table.apply(0, "b", True)  # again: no change
    assert table.version == v
    table.apply(0, "a", False)
    assert table.wanted() == {"b"}
    table.apply(7, "zzz", True)  # a bucket we do not own: ignored
    assert table.wanted() == {"b"}


def test_revoked_bucket_stays_wanted_for_the_overlap_then_goes() -> None:
    table = _table({0: "a", 1: "b"})
    table.revoke([1], now=100.0)
    snap = table.snapshot()
    assert snap.owned == (0,) and snap.overlap == (1,)
    assert snap.wanted == {"a", "b"}
    table.expire(109.9)
    assert table.wanted() == {"a", "b"}
    table.expire(110.0)
    assert table.wanted() == {"a"}
    assert table.snapshot().overlap == ()


def test_a_lost_bucket_is_kept_until_confirmed_or_given_back() -> None:
    table = _table({0: "a", 1: "b", 2: "c d"})
    table.revoke([2], now=0.0)
    table.revoke([1, 2], now=1.0)  # the session expired: lost, after a revocation for 2
    assert table.wanted() == {"a", "b", "c", "d"}, "nothing is dropped before someone has it"
    assert table.snapshot().overlap == (1, 2)
    assert table.assign({1: 1}) == []  # the group gives 1 straight back
    table.load(1, 1, ("b", True))
    assert table.wanted() == {"a", "b", "c", "d"} and table.snapshot().overlap == (2,)
    table.confirm({"c", "d"}, now=2.0)
    assert table.wanted() == {"a", "b"} and table.snapshot().overlap == ()


def test_a_confirmation_heard_before_the_loss_releases_the_lost_channels() -> None:
    table = _table({0: "a b", 1: "c"})
    table.confirm({"a"}, now=10.0)  # the new owner's JOIN, heard before the expired session is
    table.confirm({"c"}, now=10.0)
    table.confirm(set(), now=11.0, withdrawn={"c"})  # ... and c left again: not held elsewhere now
    table.revoke([0, 1], now=12.0)
    assert table.wanted() == {"b", "c"}
    assert table.take_handed_off() == {"a"}
    table = _table({0: "a b"})
    table.confirm({"a"}, now=0.0)
    table.revoke([0], now=HELD_ELSEWHERE_S + 1)  # too old to trust: kept until confirmed again
    assert table.wanted() == {"a", "b"} and not table.elsewhere
    table.confirm({"x"}, now=200.0)
    table.confirm({"y"}, now=201.0 + HELD_ELSEWHERE_S)
    assert list(table.elsewhere) == ["y"], "what is too old to trust is not kept either"


def test_a_confirmation_from_before_a_channel_was_ours_releases_nothing() -> None:
    table = BucketTable(handoff_timeout_s=10)
    table.confirm({"a", "b"}, now=0.0)  # the previous owner's JOINs (it may die without leaving)
    table.assign({0: 1})
    table.load(0, 1, ("a", True))  # its bucket is ours now
    table.apply(0, "b", True)
    table.revoke([0], now=1.0)  # and moves on to a third worker
    assert table.wanted() == {"a", "b"}, "kept until the third worker confirms, not released at once"


def test_zero_overlap_and_revoking_a_loading_bucket_keep_nothing() -> None:
    table = _table({0: "a"}, handoff_timeout_s=0)
    table.revoke([0], now=0.0)
    assert table.wanted() == frozenset()
    table = BucketTable(handoff_timeout_s=10)
    table.assign({3: 2, 5: 1})
    table.load(3, 1, ("x", True))
    assert table.revoke([3], now=0.0) == [3]  # never loaded: nothing was being logged, nothing to keep
    assert table.wanted() == frozenset() and table.snapshot().overlap == ()
    assert table.revoke([5], now=0.0) == [5] and table.snapshot().loading == ()


def test_reassigned_during_overlap_keeps_channels_until_reloaded() -> None:
    table = _table({4: "a b"})
    table.revoke([4], now=0.0)
    assert table.assign({4: 1}) == []  # it comes back (a flapping rebalance)
    assert table.wanted() == {"a", "b"}  # still from the overlap copy while reloading
    assert table.assign({4: 1}) == [4], "assigned again while loading: the earlier read is stale"
    table.load(4, 1, ("a", True))
    assert table.wanted() == {"a"}  # the fresh read wins; the overlap copy is gone
    table.expire(1000.0)
    assert table.wanted() == {"a"}


def test_channel_in_two_buckets_is_wanted_while_either_has_it() -> None:
    # cannot happen with one partitioner, but the union must still be right
    table = _table({0: "a", 1: "a"}, handoff_timeout_s=5)
    table.revoke([0], now=0.0)
    table.expire(6.0)
    assert table.wanted() == {"a"}


def test_consumer_config_kip848_sets_no_client_side_group_keys() -> None:
    conf = consumer_config({"bootstrap.servers": "x"}, group_id="g", protocol="consumer",
                           session_timeout_ms=6000, client_id="c")  # fmt: skip
    assert conf["group.protocol"] == "consumer"
    assert "session.timeout.ms" not in conf and "partition.assignment.strategy" not in conf
    assert conf["enable.auto.commit"] is False and conf["fetch.wait.max.ms"] == FOLLOW_FETCH_WAIT_MS
    settings = KafkaSettings(kafka_bootstrap_servers="x:9092")
    loader = loader_config(settings, client_id="c")
    assert loader["enable.partition.eof"] is True and "fetch.wait.max.ms" not in loader
    assert loader["bootstrap.servers"] == "x:9092" and loader["client.id"] == "c-loader"
    assert loader["group.id"] != loader_config(settings, client_id="c")["group.id"]  # never a shared group
    classic = consumer_config({}, group_id="g", protocol="classic", session_timeout_ms=6000, client_id="c")
    assert classic["partition.assignment.strategy"] == "cooperative-sticky"
    assert classic["session.timeout.ms"] == 6000


def test_a_revoked_channel_is_kept_until_the_new_owner_confirms_it() -> None:
    table = _table({0: "a", 1: "b c d"}, handoff_timeout_s=900)
    table.revoke([1], now=0.0)
    table.expire(600.0)  # minutes later (a JOIN-limited new owner): still logged
    assert table.wanted() == {"a", "b", "c", "d"}
    v = table.version
    table.confirm({"b", "zzz"}, now=1.0)
    assert table.wanted() == {"a", "c", "d"} and table.version > v
    assert table.take_handed_off() == {"b"} and table.take_handed_off() == set()
    table.confirm({"c", "d"}, now=1.0)
    assert table.wanted() == {"a"} and table.snapshot().overlap == ()
    assert table.timed_out == 0


def test_an_unconfirmed_hand_off_ends_at_the_timeout_and_is_counted() -> None:
    table = _table({2: "x y"}, handoff_timeout_s=30)
    table.revoke([2], now=0.0)
    table.confirm({"x"}, now=1.0)
    table.expire(30.0)
    assert table.wanted() == frozenset()
    assert table.timed_out == 1 and table.overlap_channels == 0
