"""Erasure on the real Cassandra, over rows the sink's executor wrote: a user everywhere, a user in one
channel, a whole channel; every table checked afterwards; re-runs; the audit row; a kill -9 halfway."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from consent import audit
from consent.records import login_digest
from core.errors import ChatlogError
from store.erase import erase
from tests.integration.consent.filled_keyspace import TARGET_ID, TARGET_LOGIN, Filled, read_tables

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
TARGET_KEYS = {TARGET_ID, f"login:{TARGET_LOGIN}"}


def assert_user_gone(session: Any, *, channel: str | None = None) -> None:
    t = read_tables(session)
    assert [c for c, key in t.chat_by_channel if key in TARGET_KEYS and channel in (None, c)] == []
    assert [c for c, key in t.chat_by_user if key in TARGET_KEYS and channel in (None, c)] == []
    assert [c for c, _p, key in t.user_login_keys if key in TARGET_KEYS and channel in (None, c)] == []
    if channel is None:
        assert [u for u in t.user_names if u[0] == TARGET_ID] == []
        assert [u for u in t.user_ids_by_login if u[1] == TARGET_ID or u[0] == TARGET_LOGIN] == []
        marks = (f"user-id={TARGET_ID}", f"login={TARGET_LOGIN};", f":{TARGET_LOGIN}!", f" :{TARGET_LOGIN}")
        assert [line for line in t.lines if any(m in line for m in marks)] == []


def _erased_logins(session: Any, keyspace: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in session.execute(f"SELECT user_id, digest FROM {keyspace}.erased_logins"):
        out.setdefault(row.user_id, set()).add(row.digest)
    return out


def test_erase_a_user_everywhere_leaves_no_row_and_a_rerun_deletes_nothing(
    filled: Filled, session: Any
) -> None:
    keyspace = filled.settings.cassandra_keyspace
    before = read_tables(session)
    mine = sum(1 for _c, key in before.chat_by_channel if key in TARGET_KEYS)
    assert mine > 40  # sent, timed out (CLEARCHAT), deleted (CLEARMSG, by login) in 3 channels
    assert {key for _c, key in before.chat_by_channel} >= TARGET_KEYS
    indexed = [(c, key) for c, _p, key in before.user_login_keys if key in TARGET_KEYS]
    assert indexed == [("502", f"login:{TARGET_LOGIN}")]  # the deleted message's login key, indexed

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")

    assert report.rows["chat_by_channel"] == mine
    assert report.rows["chat_by_user"] == sum(1 for _c, key in before.chat_by_user if key in TARGET_KEYS)
    names = [n for n in before.user_names if n[0] == TARGET_ID]
    assert len(names) == 2  # user5 and User5 (display names)
    assert report.rows["user_names"] == 2 and report.rows["user_ids_by_login"] == 1
    assert report.rows["user_login_keys"] == 1
    assert report.partitions["chat_by_channel"] >= 1  # the bucket of chan0 that held only user5's lines
    assert_user_gone(session)
    after = read_tables(session)
    # everyone else's rows are all there
    others = Counter((c, k) for c, k in before.chat_by_channel if k not in TARGET_KEYS)
    assert Counter(after.chat_by_channel) == others
    assert len(after.chat_buckets) == len(before.chat_buckets)
    assert sorted(after.user_names) == sorted(n for n in before.user_names if n[0] != TARGET_ID)
    # the login survives only as its digest, for a sink started later (a CLEARMSG names it by login)
    assert _erased_logins(session, keyspace) == {TARGET_ID: {login_digest(TARGET_LOGIN)}}

    again = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")
    assert again.total_rows == 0 and sum(again.partitions.values()) == 0
    assert read_tables(session) == after

    entries = audit.read(session, keyspace)
    erased = [e for e in entries if e.action == "erase"]
    assert len(erased) == 2
    assert (erased[1].kind, erased[1].id, erased[1].by) == ("user", TARGET_ID, "test:erase")
    assert erased[1].deleted["chat_by_channel"] == mine
    assert erased[0].deleted == {}


def test_erase_a_user_in_one_channel_keeps_the_other_channels(filled: Filled, session: Any) -> None:
    before = read_tables(session)
    report = erase(session, filled.settings.cassandra_keyspace, user_id=TARGET_ID, channel_id="501", by="t")
    assert report.rows["chat_by_channel"] > 0
    assert_user_gone(session, channel="501")
    after = read_tables(session)
    for channel in ("500", "502"):
        kept = [k for c, k in after.chat_by_channel if c == channel and k in TARGET_KEYS]
        assert kept == [k for c, k in before.chat_by_channel if c == channel and k in TARGET_KEYS]
        assert kept
    assert after.user_names == before.user_names  # the name history is not per channel
    assert report.rows["user_names"] == 0
    assert _erased_logins(session, filled.settings.cassandra_keyspace) == {}  # the logins stay in clear


def test_erase_a_channel_removes_its_rows_from_every_table(filled: Filled, session: Any) -> None:
    before = read_tables(session)
    report = erase(session, filled.settings.cassandra_keyspace, channel_id="502", by="t")
    after = read_tables(session)
    assert [c for c, _k in after.chat_by_channel if c == "502"] == []
    assert [c for c, _k in after.chat_by_user if c == "502"] == []
    assert "502" not in after.chat_buckets
    assert [k for k in before.user_login_keys if k[0] == "502"] != []
    assert [k for k in after.user_login_keys if k[0] == "502"] == []
    assert sorted(after.user_login_keys) == sorted(k for k in before.user_login_keys if k[0] != "502")
    assert [n for n in after.channel_names if n[0] == "502"] == []
    assert [n for n in after.channel_ids_by_login if n[1] == "502"] == []
    assert report.rows["chat_by_channel"] == sum(1 for c, _k in before.chat_by_channel if c == "502")
    assert Counter(after.chat_by_channel) == Counter(r for r in before.chat_by_channel if r[0] != "502")
    assert Counter(after.chat_by_user) == Counter(r for r in before.chat_by_user if r[0] != "502")
    assert erase(session, filled.settings.cassandra_keyspace, channel_id="502", by="t").total_rows == 0


def test_bad_ids_and_a_missing_keyspace_are_one_line(filled: Filled, session: Any) -> None:
    with pytest.raises(ChatlogError, match="digits only"):
        erase(session, filled.settings.cassandra_keyspace, user_id="user5", by="t")
    with pytest.raises(ChatlogError, match="a user id, a channel id"):
        erase(session, filled.settings.cassandra_keyspace, by="t")
    with pytest.raises(ChatlogError, match="nosuchkeyspace"):
        erase(session, "nosuchkeyspace", user_id=TARGET_ID, by="t")


KILL_SCRIPT = """
import sys, time
from store.erase import erase
from core.cql import connect
from sink.settings import SinkSettings

settings = SinkSettings(cassandra_keyspace=sys.argv[1])
cluster, session = connect(settings, keyspace=settings.cassandra_keyspace)

def step(line):
    print(line, flush=True)
    time.sleep(0.3)

erase(session, settings.cassandra_keyspace, user_id=sys.argv[2], by="test:killed", progress=step)
print("finished", flush=True)
"""


def test_an_erasure_killed_halfway_completes_when_run_again(filled: Filled, session: Any) -> None:
    keyspace = filled.settings.cassandra_keyspace
    before = read_tables(session)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, keyspace, TARGET_ID],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    steps = [proc.stdout.readline() for _ in range(3)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert all(s.startswith("chat_by_user") for s in steps), steps
    halfway = read_tables(session)
    left = [k for _c, k in halfway.chat_by_channel if k in TARGET_KEYS]
    assert 0 < len(left) < sum(1 for _c, k in before.chat_by_channel if k in TARGET_KEYS)

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:rerun")
    assert report.rows["chat_by_channel"] == len(left)
    assert_user_gone(session)
    assert erase(session, keyspace, user_id=TARGET_ID, by="test:rerun").total_rows == 0


def test_erase_a_user_whose_months_are_packed_leaves_no_row(filled: Filled, session: Any) -> None:
    from sink.pack import pack_months

    keyspace = filled.settings.cassandra_keyspace
    before = read_tables(session)
    mine = sum(1 for _c, key in before.chat_by_channel if key in TARGET_KEYS)
    far = 253_402_300_799_999  # every month of the data over
    packed = pack_months(session, keyspace, settle_s=0, now_ms=far)
    assert packed.packed > 0 and packed.rows >= mine  # the target's rows now in frames, not rows
    frames = session.execute(f"SELECT user_key, packed_rows FROM {keyspace}.chat_by_user").all()
    assert any(r.user_key == TARGET_ID and r.packed_rows for r in frames)

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")

    assert report.rows["chat_by_channel"] == mine  # found through the frames
    assert_user_gone(session)
