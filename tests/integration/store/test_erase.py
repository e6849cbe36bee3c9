"""store.erase on the real Cassandra, over blocks the sink's executor wrote (the keyspace of
tests/integration/consent/filled_keyspace.py): what it deletes where, block by block. A user's month
partitions are deleted whole; in a channel's days only the blocks that held one of the user's lines are
written again, without them (a block of the user's lines only is deleted), every other block is left as it
was; the report counts lines and partitions per table; a run killed halfway is finished by the next; a
period packed (store.pack), with a late block beside it, is erased as exactly. (What erasure means for the
consent rules: tests/integration/consent/test_erase.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from store import pack as store_pack
from store.blocks import CHANNEL, USER, Table
from store.erase import erase
from store.frame import decode
from store.keys import day_of, event_channel_key, filed_under, message_uuid, month_of, uuid_text
from store.pack import Blocks, read
from tests.integration.consent.filled_keyspace import (
    BASE_MS,
    TARGET_ID,
    TARGET_KEYS,
    TARGET_LOGIN,
    Filled,
    read_stored,
    write,
)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]

Partition = tuple[Any, ...]
BlockLines = dict[Any, tuple[int, list[tuple[str, str | None]]]]
"""Block id -> (its write time in µs, its lines as (message uuid text, filed-under user key))."""


def channel_partitions(filled: Filled) -> list[Partition]:
    """Every channel day of the events (part 0: a test keyspace never fills one)."""
    return sorted({(event_channel_key(e), day_of(e.sent_at), 0) for e in filled.events})


def user_partitions(filled: Filled, keys: frozenset[str] = TARGET_KEYS) -> list[Partition]:
    """Every user month of the events filed under ``keys``."""
    return sorted(
        {
            (event_channel_key(e), who, month_of(e.sent_at), 0)
            for e in filled.events
            if (who := filed_under(e)) is not None and who in keys
        }
    )


def blocks_of(session: Any, keyspace: str, table: Table, partition: Partition) -> BlockLines:
    """The blocks of one partition as :func:`store.pack.read` reads them."""
    found = read(Blocks(session, keyspace, table), partition)
    out: BlockLines = {}
    for _first, block, value, written, _ttl, _last in found.rows:
        frame = decode(value)
        lines = frame.lines(range(len(frame)))
        out[block] = (written, [(uuid_text(line[1]), line[5]) for line in lines])
    return out


def target_ids(filled: Filled) -> set[str]:
    return {str(message_uuid(e.message_id)) for e in filled.events if filed_under(e) in TARGET_KEYS}


def test_only_the_blocks_that_held_the_users_lines_are_written_again_and_the_report_counts_them(
    filled: Filled, session: Any
) -> None:
    keyspace = filled.settings.cassandra_keyspace
    days = channel_partitions(filled)
    before = {p: blocks_of(session, keyspace, CHANNEL, p) for p in days}
    assert all(len(blocks) >= 2 for blocks in before.values())  # each day written by several tasks
    months = user_partitions(filled)
    assert all(blocks_of(session, keyspace, USER, p) for p in months)
    mine = target_ids(filled)

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")

    shared = alone = 0
    for partition, blocks in before.items():
        after = blocks_of(session, keyspace, CHANNEL, partition)
        untouched = {b: v for b, v in blocks.items() if not any(who in TARGET_KEYS for _m, who in v[1])}
        assert {b: after.get(b) for b in untouched} == untouched  # the same block, not written again
        new = {b: v for b, v in after.items() if b not in untouched}
        for block, (_written, lines) in blocks.items():
            if block in untouched:
                continue
            assert block not in after  # replaced: its lines without user5's are a new block
            others = [line for line in lines if line[1] not in TARGET_KEYS]
            if others:
                shared += 1
                assert [v[1] for v in new.values() if v[1] == others] == [others]
            else:
                alone += 1  # user5's lines only: deleted, nothing written
        kept = [line for b, v in blocks.items() if b not in untouched for line in v[1]]
        assert sorted(line for v in new.values() for line in v[1]) == sorted(
            line for line in kept if line[1] not in TARGET_KEYS
        )
    assert shared > 0 and alone == 2  # chan0's lone block, chan2's block of the deleted message
    for partition in user_partitions(filled):  # the user's month partitions: deleted whole
        assert blocks_of(session, keyspace, USER, partition) == {}
    others = user_partitions(filled, frozenset({"1007", "1000", "login:user7"}))
    assert all(blocks_of(session, keyspace, USER, p) for p in others)

    assert report.rows["channel_blocks"] == len(mine) == report.rows["user_blocks"]
    assert report.partitions["user_blocks"] == len(months)
    pairs = {p[:2] for p in months}  # (channel key, user key): 1005 in each channel, login:user5 in 502
    assert len(pairs) == 4 and ("502", f"login:{TARGET_LOGIN}") in pairs
    assert report.partitions["user_months"] == report.rows["channel_users"] == len(pairs)
    assert report.partitions["channel_blocks"] == 0  # a channel's days stay (other users' lines)
    assert report.rows["user_names"] == 2 and report.rows["user_ids_by_login"] == 1
    assert report.partitions["user_names"] == 1
    assert report.deleted() == {
        **{t: n for t, n in report.rows.items() if n},
        **{f"{t}:partitions": n for t, n in report.partitions.items() if n},
    }


KILL_SCRIPT = """
import sys, time
from store.erase import erase
from core.cql import connect
from sink.settings import SinkSettings

settings = SinkSettings(cassandra_keyspace=sys.argv[1])
cluster, session = connect(settings, keyspace=settings.cassandra_keyspace)

def step(line):  # killed while it sleeps: after a step, before the next (a loaded machine is slow)
    print(line, flush=True)
    time.sleep(1)

erase(session, settings.cassandra_keyspace, user_id=sys.argv[2], by="test:killed", progress=step)
print("finished", flush=True)
"""


def test_an_erasure_killed_halfway_completes_when_run_again(filled: Filled, session: Any) -> None:
    keyspace = filled.settings.cassandra_keyspace
    mine = target_ids(filled)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, keyspace, TARGET_ID],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    steps = [proc.stdout.readline() for _ in range(2)]  # channels 500 and 501 done, 502 not
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert all(s.startswith("user_blocks") for s in steps), steps
    halfway = read_stored(session, keyspace)
    left = {copy: sum(halfway.ids(copy, keys=TARGET_KEYS).values()) for copy in ("channel", "user")}
    assert all(0 < n < len(mine) for n in left.values()), left

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:rerun")
    assert (report.rows["channel_blocks"], report.rows["user_blocks"]) == (left["channel"], left["user"])
    after = read_stored(session, keyspace)
    assert after.ids("channel", keys=TARGET_KEYS) == {} and after.ids("user", keys=TARGET_KEYS) == {}
    assert after.channel == halfway.without("channel", mine) and after.user == halfway.without("user", mine)
    assert erase(session, keyspace, user_id=TARGET_ID, by="test:rerun").total_rows == 0


def test_erase_a_user_whose_periods_are_packed_leaves_no_line_in_either_copy(
    filled: Filled, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.testing import twitch_event
    from store.write import close_sessions

    keyspace = filled.settings.cassandra_keyspace
    monkeypatch.setattr(store_pack, "current_ms", lambda: 253_402_300_799_999)  # every period over
    packed = store_pack.pack(session, keyspace, settle_s=0)
    assert packed.packed > 0 and packed.by_table.keys() == {"channel_blocks", "user_blocks"}
    hours: dict[Partition, set[int]] = {}  # a channel's blocks are cut at each UTC hour
    for e in filled.events:
        hours.setdefault((event_channel_key(e), day_of(e.sent_at), 0), set()).add(e.sent_at // 3_600_000)
    for partition, held in hours.items():
        assert len(blocks_of(session, keyspace, CHANNEL, partition)) == len(held)  # packed
    assert all(len(blocks_of(session, keyspace, USER, p)) == 1 for p in user_partitions(filled))
    # a late line of user5's (a backfill): a live block beside the packed one, in a day and a month
    late = twitch_event(
        "PRIVMSG", "chan1", sent_at=BASE_MS - 3 * 3_600_000 + 500, login=TARGET_LOGIN, user_id=TARGET_ID,
        room_id="501", text="late", message_id="00000009-0000-4000-8000-000000000002",
    )  # fmt: skip
    write(filled.settings, [late])
    close_sessions()
    day = ("501", day_of(late.sent_at), 0)
    assert len(blocks_of(session, keyspace, CHANNEL, day)) == len(hours[day]) + 1
    before = read_stored(session, keyspace)
    mine = target_ids(filled) | {str(message_uuid(late.message_id))}
    assert {k[0] for k in before.ids("channel", keys=TARGET_KEYS)} == mine

    report = erase(session, keyspace, user_id=TARGET_ID, by="test:erase")

    assert report.rows["channel_blocks"] == report.rows["user_blocks"] == len(mine)  # found in the frames
    after = read_stored(session, keyspace)
    for copy in ("channel", "user"):
        assert after.ids(copy, keys=TARGET_KEYS) == {}
        assert after.without(copy, mine) == after.ids(copy)  # none of user5's, whatever they were filed under
        assert after.ids(copy) == before.without(copy, mine)  # every other line as it was
    assert [line for line in after.lines if "late" in line or f"user-id={TARGET_ID}" in line] == []
