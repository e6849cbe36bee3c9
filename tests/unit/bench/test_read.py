"""The pure parts of ``chatlog bench read``: the data set's shape (parts, chunks, events whose lines say
what they say), the CPU-per-line and profile tables, the verdict and the summary. Nothing here is timed."""

from __future__ import annotations

import cProfile
import uuid
from collections import namedtuple
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgspec
import pytest
from schemas.cql import bucket_of, message_uuid

from bench.read import (
    DAY_CHANNEL,
    DAY_LO,
    DAY_MS,
    DAY_ROOM,
    GOALS,
    MONTH_CHANNEL,
    MONTH_HI,
    MONTH_LO,
    MONTH_ROOM,
    USER,
    USER_ID,
    Chunk,
    Params,
    Template,
    _runs_summary,
    chunk_events,
    chunks,
    cpu_per_line,
    parts,
    plot,
    profile_top,
    summary,
    template,
    template_pool,
    verdict,
    where,
)
from bench.serve_data import relined
from core.irc_parse import parse_line
from core.times import epoch_ms, naive_utc
from schemas.chat_event import ChatEvent
from store.line import stored_event
from store.stored_line import strip

SMALL = Params(day_messages=500, channel_messages=3000, user_messages=30)


@pytest.fixture(scope="module")
def pool() -> list[Template]:
    return template_pool(400)


def test_the_data_set_is_a_day_a_month_channel_and_a_user() -> None:
    day, channel, user = parts(SMALL)
    assert (day.channel, day.room_id, day.lo, day.hi, day.count) == (
        DAY_CHANNEL,
        DAY_ROOM,
        DAY_LO,
        DAY_LO + DAY_MS,
        500,
    )
    assert (channel.channel, channel.room_id, channel.count, channel.user) == (
        MONTH_CHANNEL,
        MONTH_ROOM,
        3000,
        None,
    )
    assert (user.channel, user.count, user.user) == (MONTH_CHANNEL, 30, (USER, USER_ID))
    assert MONTH_HI - MONTH_LO == 30 * DAY_MS  # April: the user's 30 days
    assert len({p.salt for p in (day, channel, user)}) == 3
    assert [p.name for p in parts(Params(day_messages=0, channel_messages=10, user_messages=0))] == [
        "channel"
    ]


def test_messages_are_spread_evenly_inside_their_range_and_the_users_each_in_its_own_bucket() -> None:
    for part in parts(Params()):
        times = [part.sent_at(i) for i in (0, 1, part.count // 2, part.count - 1)]
        assert times == sorted(times)
        assert part.lo <= times[0] and times[-1] < part.hi
    user = parts(Params())[2]
    assert user.count == 300
    assert user.buckets() == 300  # the pointer layout's worst case: one channel-table query per message
    assert bucket_of(user.sent_at(0)) != user.sent_at(0)  # not on a bucket's edge


def test_chunks_cover_every_part_exactly_once() -> None:
    every = parts(SMALL)
    cut = chunks(every, size=700)
    assert all(0 < c.count <= 700 for c in cut)
    for part in every:
        mine = [c for c in cut if c.part == part]
        assert mine[0].start == 0 and mine[-1].stop == part.count
        assert all(a.stop == b.start for a, b in pairwise(mine))
    assert sum(c.count for c in cut) == 3530
    with pytest.raises(ValueError, match="positive"):
        chunks(every, size=0)


def test_every_event_is_the_parse_of_its_line(pool: list[Template]) -> None:
    for chunk in chunks(parts(SMALL), size=400)[:3] + chunks(parts(SMALL), size=400)[-2:]:
        for event in chunk_events(chunk, pool):
            parsed = parse_line(event.raw, received_at=event.received_at)
            assert parsed is not None
            assert msgspec.structs.replace(parsed, ingester=event.ingester) == event


def test_events_are_moved_to_the_parts_channel_time_and_user(pool: list[Template]) -> None:
    day, _, user = parts(SMALL)
    events = chunk_events(Chunk(day, 100, 300), pool)
    assert len(events) == 200
    assert {(e.channel, e.channel_id, e.tags["room-id"]) for e in events} == {
        (DAY_CHANNEL, DAY_ROOM, DAY_ROOM)
    }
    assert [e.sent_at for e in events] == [day.sent_at(i) for i in range(100, 300)]
    assert all(e.tags["tmi-sent-ts"] == str(e.sent_at) and e.received_at > e.sent_at for e in events)
    assert len({e.user_login for e in events}) > 20  # the corpus's chatters
    assert USER not in {e.user_login for e in events}
    ids = [e.message_id for e in events]
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 4 and e.tags["id"] == i for i, e in zip(ids, events, strict=True))
    assert chunk_events(Chunk(day, 100, 300), pool) == events  # deterministic
    mine = chunk_events(Chunk(user, 0, user.count), pool)
    assert {(e.user_login, e.user_id, e.display_name) for e in mine} == {(USER, USER_ID, USER.capitalize())}
    assert all(e.raw.split(" ", 2)[1].startswith(f":{USER}!") for e in mine)
    assert all(MONTH_LO < e.sent_at < MONTH_HI for e in mine)


def test_the_stored_line_leaves_out_the_id_and_the_time(pool: list[Template]) -> None:
    for event in chunk_events(Chunk(parts(SMALL)[1], 0, 50), pool):
        stored = strip(event.raw, message_uuid(event.message_id), event.sent_at)
        assert len(stored) == len(event.raw) - len(event.message_id) - len(str(event.sent_at))


def test_an_empty_pool_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        chunk_events(Chunk(parts(SMALL)[0], 0, 1), [])


def test_a_template_needs_each_value_it_replaces_once(pool: list[Template]) -> None:
    base = pool[0].event
    assert "{id}" in pool[0].line and "{login}" in pool[0].user_line
    no_id = relined(msgspec.structs.replace(base, tags={k: v for k, v in base.tags.items() if k != "id"}))
    with pytest.raises(ValueError, match="without id"):
        template(no_id)
    braces = relined(msgspec.structs.replace(base, text="{curly} {{text}}"))
    (event,) = chunk_events(Chunk(parts(SMALL)[0], 0, 1), [template(braces)])
    assert event.raw.endswith(" :{curly} {{text}}")
    with pytest.raises(ValueError, match="not a line"):
        template(msgspec.structs.replace(base, raw=base.raw + " "))


Row = namedtuple("Row", "sent_at message_id line received_at")


def _rows(events: list[ChatEvent]) -> list[Row]:
    out = []
    for e in events:
        mid = message_uuid(e.message_id)
        out.append(Row(naive_utc(e.sent_at), mid, strip(e.raw, mid, e.sent_at), naive_utc(e.received_at)))
    return out


def test_timestamps_convert_both_ways() -> None:
    for ms in (0, DAY_LO, MONTH_HI - 1, 1_713_312_000_123):
        assert epoch_ms(naive_utc(ms)) == ms


def test_cpu_per_line_covers_what_the_reader_does_with_a_row(pool: list[Template]) -> None:
    events = chunk_events(Chunk(parts(SMALL)[0], 0, 200), pool)
    rows = _rows(events)
    for row, event in zip(rows, events, strict=True):  # the rows are what the reader reads back
        back = stored_event(
            row.line, row.message_id, epoch_ms(row.sent_at), epoch_ms(row.received_at), DAY_CHANNEL
        )
        assert msgspec.structs.replace(back, ingester=event.ingester) == event
    cost = cpu_per_line(rows, DAY_CHANNEL, repeat=1)
    assert set(cost) == {"timestamps", "restore", "stored_event", "restore_only", "parse"}
    assert all(cost[k] > 0 for k in ("timestamps", "restore", "stored_event"))
    with pytest.raises(ValueError, match="no rows"):
        cpu_per_line([], DAY_CHANNEL)


def _busy(n: int) -> int:
    return sum(i * i for i in range(n))


def test_profile_top_lists_functions_by_own_time() -> None:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(20):
        _busy(20_000)
    profile.disable()
    top = profile_top(profile, n=5)
    assert 0 < len(top) <= 5
    assert [t["own_s"] for t in top] == sorted((t["own_s"] for t in top), reverse=True)
    assert any("_busy" in t["function"] and t["calls"] == 20 for t in top)


def test_where_shortens_file_names() -> None:
    venv = "/work/main/.venv/lib/python3.11/site-packages/cassandra/cluster.py"
    assert where(venv, 12, "result") == "cassandra/cluster.py:12(result)"
    assert where("/work/main/serve/store/row.py", 3, "f") == "serve/store/row.py:3(f)"
    assert where("/usr/lib/python3.11/asyncio/events.py", 80, "_run") == "asyncio/events.py:80(_run)"
    assert where("~", 0, "<built-in method builtins.len>") == "<built-in method builtins.len>"


def test_runs_summary_takes_the_best_and_the_median() -> None:
    runs = [{"lines_per_s": r} for r in (90_000, 120_000, 100_000)]
    assert _runs_summary(runs) == {"runs": runs, "best_lines_per_s": 120_000, "median_lines_per_s": 100_000}


def _result(*, rate: int = 150_000, raw: int = 180_000, p99: float | None = 25.0, ratio: float = 0.33) -> Any:
    level = {
        "p50_ms": 12.0,
        "p99_ms": p99,
        "errors": 0,
        "requests_per_s": 800.0,
        "process_cpu_cores": 0.9,
        "process_cpu_ms_per_read": 1.1,
        "cassandra_cpu_ms_per_read": 2.0,
    }
    if p99 is None:
        level["over_ms"] = 300_000.0
    return {
        "data": {"channel_messages": 2_000_000, "day_messages": 200_000, "user_messages": 300},
        "write": {"events": 2_200_300, "raw_line_bytes_mean": 510.0, "events_per_s": 9000, "workers": 2},
        "disk": {
            "bytes_per_message": round(ratio * 510, 1),
            "ratio_to_raw_line": ratio,
            "raw_line_bytes_mean": 510.0,
            "tables": {
                "chat_by_channel": {"bytes_per_message": 140.0},
                "chat_by_user": {"bytes_per_message": 28.0},
            },
        },
        "channel_day": {
            "lines": 200_000,
            "buckets": 288,
            "reader": {
                "best_lines_per_s": rate,
                "median_lines_per_s": rate,
                "runs": [{"process_cpu_us_per_line": 9}],
            },
            "raw": {
                "best_lines_per_s": raw,
                "median_lines_per_s": raw,
                "runs": [{"process_cpu_us_per_line": 3}],
            },
            "ratio_to_raw": round(rate / raw, 3),
            "cpu_us_per_line": {"restore_only": 1.0, "parse": 4.0, "timestamps": 0.5},
            "cpu_split_us_per_line": {"process": 9.0, "main_thread": 7.5},
        },
        "user_month": {
            "user_messages": 300,
            "user_buckets": 300,
            "channel_messages": 2_000_000,
            "levels": {"1": {**level, "p99_ms": 20.0}, "32": level},
            "cpu_split": {
                "reads": 5,
                "wall_ms_per_read": 15.0,
                "process_cpu_ms_per_read": 9.5,
                "main_thread_cpu_ms_per_read": 7.0,
            },
        },
        "seconds": 700.0,
    }


def test_verdict_meets_each_goal_or_not() -> None:
    good = verdict(_result())
    assert set(good) == set(GOALS)
    assert all(v["met"] for v in good.values())
    bad = verdict(_result(rate=90_000, raw=200_000, p99=31.0, ratio=0.43))
    assert not any(v["met"] for v in bad.values())
    assert bad["channel_day_ratio_to_raw"]["value"] == 0.45
    over = verdict(_result(p99=None))["user_month_p99_ms_at_32"]
    assert over == {"value": ">300000.0", "met": False}


def test_verdict_leaves_out_what_was_not_run() -> None:
    result = _result()
    del result["channel_day"]
    del result["user_month"]["levels"]["32"]
    assert set(verdict(result)) == {"bytes_ratio_to_raw_line"}


def test_summary_ends_with_the_goals_met() -> None:
    result = _result(p99=45.0)
    result["verdict"] = verdict(result)
    text = summary(result)
    assert "2,000,000 in the month channel" in text
    assert "reader 150,000 lines/s" in text and "0.833x" in text
    assert "goal user_month_p99_ms_at_32: 45.0 NOT met" in text
    assert "of which the event loop's thread 7.5 µs" in text
    assert "CPU 9.5 ms/read, of which the event loop's thread 7.0 ms" in text
    assert text.splitlines()[-1] == "3 of 4 goals met (missed: user_month_p99_ms_at_32); 700 s"


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "read.png"
    plot(_result(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
