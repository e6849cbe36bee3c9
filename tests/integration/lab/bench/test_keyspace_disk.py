"""On the real stack: ``chatlog bench serve``'s data set written through store.write is every line once in
each copy, and lab.bench.keyspace_disk flushes and compacts the line tables and counts their bytes."""

from __future__ import annotations

import pytest

from core.cql import connect
from core.settings import StackSettings, load
from lab.bench import serve_data
from lab.bench.keyspace_disk import LOG_TABLES, disk_usage, flush, flush_and_compact
from lab.bench.scratch import scratch_keyspaces
from sink.settings import SinkSettings
from store.scan import stored_ids

pytestmark = pytest.mark.integration


def test_the_data_set_is_written_once_and_its_tables_measured_on_disk(
    stack: StackSettings, unique: str
) -> None:
    keyspace = f"kd{unique}"
    settings = load(SinkSettings, cassandra_keyspace=keyspace, cassandra_ttl_s=0, sink_metrics_port=0)
    data = serve_data.DataSet(month_lines=3_000, day_lines=2_000, user_lines=40)
    ids = sorted(e.message_id for e in data.events())
    data_dir = stack.state_dir / "cassandra" / "data"
    with scratch_keyspaces(settings, keyspace):
        written = serve_data.write(settings, data)
        assert written["events"] == data.total
        assert set(written["rows_by_table"]) >= set(LOG_TABLES)
        cluster, session = connect(settings, timeout=60)
        try:
            assert sorted(stored_ids(session, keyspace, "channel")) == ids
            assert sorted(stored_ids(session, keyspace, "user")) == ids
            flush(session, keyspace, data_dir, 120)
            flushed = disk_usage(data_dir, keyspace, data.total, 500.0)
            assert all(t["sstables"] >= 1 for t in flushed["tables"].values()), flushed
            assert flushed["bytes_per_message"] > 0
            flush_and_compact(session, keyspace, data_dir, 300)
            compacted = disk_usage(data_dir, keyspace, data.total, 500.0)
            assert all(t["sstables"] == 1 for t in compacted["tables"].values()), compacted
            assert sorted(stored_ids(session, keyspace, "channel")) == ids  # the row written again adds none
        finally:
            cluster.shutdown()
