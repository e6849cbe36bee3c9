"""Index rows are rewritten at most once per refresh period, and outlive the rows they point to."""

from __future__ import annotations

from sink.executor.partition import IndexCache


def test_a_written_key_is_fresh_until_the_refresh_period_ends() -> None:
    cache = IndexCache(refresh_s=300)
    assert not cache.fresh("k", now=1000.0)
    cache.add(["k"], when=1000.0)
    assert cache.fresh("k", now=1000.0)
    assert cache.fresh("k", now=1299.0)
    assert not cache.fresh("k", now=1300.0)
    assert not cache.fresh("other", now=1000.0)


def test_index_rows_live_one_refresh_period_longer_than_data_rows() -> None:
    cache = IndexCache(refresh_s=300)
    assert cache.ttl(86_400) == 86_700
    assert cache.ttl(0) == 0  # no expiry stays no expiry


def test_the_cache_is_bounded() -> None:
    cache = IndexCache(refresh_s=300, max_entries=10)
    cache.add(range(11), when=0.0)
    cache.add(["new"], when=0.0)
    assert cache.fresh("new", now=1.0)
    assert not cache.fresh(3, now=1.0)
