"""``chatlog bench vs-justlog``'s pure parts: justlog's tree layout, the URL lists both servers are read
with, the Twitch stand-in's answers, and the ratio table."""

from __future__ import annotations

import gzip
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from lab.bench.justlog_server import command, helix_users, hosts_file, justlog_config
from lab.bench.justlog_tree import (
    CHANNEL_ID,
    CURRENT_DAY_READS,
    TreeParams,
    channel_day_path,
    channel_file,
    days_for,
    month_for,
    tree_bytes,
    user_file,
    user_month_path,
    write_tree,
)
from lab.bench.vs_justlog import (
    Params,
    Row,
    Side,
    alternated,
    median_grid,
    ratio_table,
    rows,
    split_warmup,
    summary,
    url_lists,
)

SMALL = TreeParams(days=3, lines_per_day=1_000, users=100, user_month_lines=30)


def test_the_paths_are_justlogs() -> None:
    root = Path("/logs")
    assert channel_file(root, "22484632", 2024, 3, 7) == Path("/logs/22484632/2024/3/7/channel.txt")
    assert user_file(root, "22484632", 2024, 3, "1234") == Path("/logs/22484632/2024/3/1234.txt")
    assert channel_day_path("22484632", 2024, 3, 7) == "/channelid/22484632/2024/3/7"
    assert user_month_path("22484632", "1234", 2024, 3) == "/channelid/22484632/userid/1234/2024/3"


def test_the_month_and_days_are_ones_justlogs_archiver_gzips() -> None:
    assert month_for(date(2026, 11, 27)) == 3
    assert month_for(date(2026, 3, 2)) == 5  # the archiver skips the current month's user files
    assert days_for(3, date(2026, 11, 2)) == [1, 3, 4]  # and today's day number's channel files
    assert len(days_for(30, date(2026, 11, 31 - 30))) == 30
    with pytest.raises(ValueError, match=r"1\.\.30"):
        days_for(31, date(2026, 11, 27))


def test_the_tree_holds_every_line_twice_by_day_and_by_user(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "logs", SMALL, today=date(2026, 11, 2))
    assert tree.days == [1, 3, 4] and tree.month == 3
    assert tree.lines == SMALL.lines == sum(tree.user_lines.values())
    by_day = []
    for day in tree.days:
        lines = channel_file(tree.root, CHANNEL_ID, tree.year, 3, day).read_text().splitlines()
        assert len(lines) == tree.day_lines[day] == SMALL.lines_per_day
        assert all(
            " PRIVMSG #benchvsjustlog :" in line and f"room-id={CHANNEL_ID};" in line for line in lines
        )
        by_day += lines
    by_user = []
    for user, count in tree.user_lines.items():
        lines = user_file(tree.root, CHANNEL_ID, tree.year, 3, user).read_text().splitlines()
        assert len(lines) == count
        assert all(f";user-id={user};" in line for line in lines)
        by_user += lines
    assert sorted(by_day) == sorted(by_user)
    assert tree.raw_bytes == sum(len(line.encode()) for line in by_day)
    assert 350 < tree.raw_bytes / tree.lines < 700  # Twitch lines with full tags
    assert set(tree.files()) == set(tree.root.rglob("*.txt"))
    assert tree_bytes(tree.root) == 2 * (tree.raw_bytes + tree.lines)  # two copies, a newline each


def test_the_same_seed_writes_the_same_tree(tmp_path: Path) -> None:
    one = write_tree(tmp_path / "a", SMALL, today=date(2026, 11, 2))
    two = write_tree(tmp_path / "b", SMALL, today=date(2026, 11, 2))
    assert one.user_lines == two.user_lines and one.regulars == two.regulars
    day = channel_file(one.root, CHANNEL_ID, 2024, 3, 1).read_bytes()
    assert day == channel_file(two.root, CHANNEL_ID, 2024, 3, 1).read_bytes()


def test_a_tree_written_again_in_the_same_place_replaces_the_one_before(tmp_path: Path) -> None:
    once = write_tree(tmp_path / "a", SMALL, today=date(2026, 11, 2))
    sizes = {p: p.stat().st_size for p in once.files()}
    again = write_tree(tmp_path / "a", SMALL, today=date(2026, 11, 2))  # a second run in one --work
    assert {p: p.stat().st_size for p in again.files()} == sizes  # user files not appended to twice


def test_the_url_lists_have_no_repeats_and_know_their_lines(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "logs", SMALL, today=date(2026, 11, 2))
    lists = url_lists(tree)
    assert set(lists) == {"user_month_text", "user_month_json", "channel_day_text", "channel_day_json"}
    for urls in lists.values():
        assert len({u.path for u in urls}) == len(urls) > 0
    months = lists["user_month_text"]
    assert len(months) >= SMALL.regulars // 2
    mean = sum(tree.user_lines[u] for u in tree.regulars) / len(tree.regulars)
    assert 0.8 * SMALL.user_month_lines <= mean <= 1.2 * SMALL.user_month_lines
    for url in months:  # regulars with about as many lines as the regulars' mean
        user = url.path.split("/")[4]
        assert user in tree.regulars and url.lines == tree.user_lines[user]
        assert 0.8 * mean <= url.lines <= 1.2 * mean
    assert [u.path + "?json" for u in months] == [u.path for u in lists["user_month_json"]]
    assert [u.lines for u in lists["channel_day_text"]] == [1_000] * 3
    assert lists["channel_day_json"][0].path == f"/channelid/{CHANNEL_ID}/2024/3/1?json"


def test_the_warm_up_urls_are_never_measured(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "logs", SMALL, today=date(2026, 11, 2))
    for kind, urls in url_lists(tree).items():
        warm, measured = split_warmup(kind, urls)
        assert warm and measured and not {u.path for u in warm} & {u.path for u in measured}
        assert len(warm) + len(measured) == len(urls)
    assert len(split_warmup("channel_day_text", tree.channel_day_urls())[0]) == 1


def test_the_grid_is_user_months_then_days() -> None:
    keys = [r.key for r in rows(Params())]
    assert keys == [
        "user_month_text_1",
        "user_month_text_32",
        "user_month_json_1",
        "user_month_json_32",
        "channel_day_text_1",
        "channel_day_text_8",
        "channel_day_json_1",
        "channel_day_json_8",
    ]
    assert Row("channel_day", "json", 8).label == "channel day json, 8 clients"
    assert Row("user_month", "text", 1).label == "user-month text, 1 client"


def _cell(rps: float, lines: int, p99: float | None) -> dict[str, Any]:
    return {
        "requests_per_s": rps,
        "lines_per_s": lines,
        "p99_ms": p99,
        "cpu_ms_per_request_total": 10.0,
        "server_rss_mb_peak": 50.0,
        "load_average": [1.0, 1.5],
    }


def _side(scale: float, storage: float) -> dict[str, Any]:
    grid = {r.key: _cell(100 * scale, int(20_000 * scale), 12.0) for r in rows(Params())}
    return {
        "grid": grid,
        "storage": {"bytes_per_message": storage, "keyspace_bytes_per_message": storage},
        "storage_packed": {"bytes_per_message": storage * 0.75},
        "storage_compacted": {"bytes_per_message": storage * 0.5},
        "archive_s": 1.0,
        "stand_in_asked": {"token": 1},
        "load": {"import_s": 1.0, "backfill_s": 2.0},
        "settle_s": [1.0],
    }


def test_the_ratio_table_is_chatlog_over_justlog_per_row() -> None:
    justlog, chatlog = _side(1.0, 215.5), _side(0.25, 256.0)
    del chatlog["grid"]["channel_day_json_8"]  # a cell missing on one side is left out
    table = ratio_table(justlog, chatlog, Params())
    assert [r["row"] for r in table][-4:] == [
        "channel_day_json_1",
        "storage",
        "storage_packed",
        "storage_compacted",
    ]
    assert len(table) == 10
    month = table[0]
    assert (month["metric"], month["justlog"], month["chatlog"], month["ratio"]) == (
        "requests_per_s",
        100.0,
        25.0,
        0.25,
    )
    day = next(r for r in table if r["row"] == "channel_day_text_1")
    assert (day["metric"], day["ratio"]) == ("lines_per_s", 0.25)
    flushed, packed, compacted = table[-3:]
    assert (flushed["justlog"], flushed["chatlog"], flushed["ratio"]) == (215.5, 256.0, 1.188)
    assert (packed["justlog"], packed["chatlog"], packed["ratio"]) == (215.5, 192.0, 0.891)
    assert (compacted["justlog"], compacted["chatlog"], compacted["ratio"]) == (215.5, 128.0, 0.594)
    del chatlog["storage_compacted"], chatlog["storage_packed"]  # not measured (the run stopped): no row
    assert [r["row"] for r in ratio_table(justlog, chatlog, Params())][-1] == "storage"


def test_the_summary_is_a_markdown_table_with_every_row() -> None:
    justlog, chatlog = _side(1.0, 215.5), _side(0.5, 100.0)
    justlog["grid"]["user_month_text_32"]["p99_ms"] = None  # cut off at the limit
    result = {
        "data": {
            "year": 2024,
            "month": 3,
            "lines": 200_000,
            "days": [1, 2],
            "users": 2_000,
            "line_bytes_mean": 507.8,
            "user_month_urls": 333,
            "user_month_lines_mean": 300.1,
            "channel_day_urls": 10,
        },
        "load_average_start": [3.0, 2.0, 1.0],
        "justlog": justlog,
        "chatlog": chatlog,
        "table": ratio_table(justlog, chatlog, Params()),
    }
    text = summary(result)
    assert "| user-month text, 1 client | 100.0 req/s, p99 12 ms | 50.0 req/s, p99 12 ms | 0.50x |" in text
    assert "p99 >limit ms" in text
    assert (
        "| channel day json, 8 clients | 20.0k lines/s, p99 12 ms | 10.0k lines/s, p99 12 ms | 0.50x" in text
    )
    assert "| storage after a flush (rows as written), B/message | 215.5 B | 100.0 B | 0.46x |" in text
    assert (
        "| storage packed, compactions as configured (as read), B/message | 215.5 B | 75.0 B | 0.35x |"
        in text
    )
    assert "| storage packed and major-compacted (beside), B/message | 215.5 B | 50.0 B | 0.23x |" in text


def test_the_stand_in_answers_helix_user_lookups() -> None:
    known = {"700000001": "benchvsjustlog", "42": "someone"}
    body = helix_users("id=700000001&id=999&login=someone", known)
    assert [(u["id"], u["login"]) for u in body["data"]] == [
        ("700000001", "benchvsjustlog"),
        ("42", "someone"),
    ]
    assert helix_users("id=1", known) == {"data": []}


def test_the_child_sees_twitch_at_the_stand_in_and_runs_justlog_itself(tmp_path: Path) -> None:
    hosts = hosts_file("127.9.8.7")
    assert "127.9.8.7 id.twitch.tv api.twitch.tv irc.chat.twitch.tv" in hosts.splitlines()
    args = command(tmp_path / "justlog", tmp_path / "config.json", tmp_path / "hosts")
    assert args[:2] == ["unshare", "-m"]
    assert "exec" in args[4] and args[-3:] == [str(tmp_path / p) for p in ("hosts", "justlog", "config.json")]
    config = justlog_config(tmp_path / "logs", 8025, "700000001")
    assert config["listenAddress"] == "127.0.0.1:8025" and config["archive"] is True
    assert config["channels"] == ["700000001"] and config["logsDirectory"] == str(tmp_path / "logs")


def test_tree_bytes_counts_archived_files(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "channel.txt.gz").write_bytes(gzip.compress(b"x" * 1000))
    (tmp_path / "b.txt").write_bytes(b"12345")
    assert tree_bytes(tmp_path) == (tmp_path / "a" / "channel.txt.gz").stat().st_size + 5


def test_a_cell_is_its_median_pass() -> None:
    def cell(rate: float, p99: float) -> dict[str, Any]:
        return {"requests_per_s": rate, "lines_per_s": rate * 300, "p99_ms": p99}

    passes = [
        {"user_month_text_1": cell(400.0, 5.0), "channel_day_text_1": {"lines_per_s": 9.0, "p99_ms": 1.0}},
        {"user_month_text_1": cell(900.0, 2.0), "channel_day_text_1": {"lines_per_s": 7.0, "p99_ms": 2.0}},
        {"user_month_text_1": cell(500.0, 9.0), "channel_day_text_1": {"lines_per_s": 8.0, "p99_ms": 3.0}},
    ]
    grid = median_grid(passes)
    month, day = grid["user_month_text_1"], grid["channel_day_text_1"]
    assert (month["requests_per_s"], month["p99_ms"], month["pass_rates"]) == (
        500.0,
        9.0,
        [400.0, 900.0, 500.0],
    )
    assert (day["lines_per_s"], day["p99_ms"]) == (8.0, 3.0)  # a day's cell ranked by lines/s
    assert median_grid(passes[:2])["user_month_text_1"]["requests_per_s"] == 400.0  # the lower middle one
    assert median_grid(passes[:1])["user_month_text_1"]["requests_per_s"] == 400.0


def test_the_sides_passes_are_taken_in_turn_warm_ups_first() -> None:
    taken: list[str] = []
    settled: list[int] = []

    def run_pass(side: Side, label: str) -> dict[str, Any]:
        taken.append(label)
        rate = float(len(taken))  # later passes faster: a machine that speeds up over the run
        return {"user_month_text_1": {"requests_per_s": rate, "lines_per_s": rate, "p99_ms": 1.0}}

    theirs = Side("justlog", "http://a", {"server": 1}, {})
    ours = Side("chatlog", "http://b", {"server": 2}, {}, lambda: settled.append(len(taken)))
    alternated((theirs, ours), 3, run_pass)

    assert taken == [
        "justlog pass 1",
        "chatlog pass 1",
        "chatlog pass 2",
        "justlog pass 2",
        "justlog pass 3",
        "chatlog pass 3",
        "chatlog pass 4",
        "justlog pass 4",
    ]
    assert settled == [2, 5, 6]  # before each measured pass of the side that asks, never before a warm-up
    assert theirs.out["pass_1"]["user_month_text_1"]["requests_per_s"] == 1.0
    assert [p["user_month_text_1"]["requests_per_s"] for p in theirs.out["passes"]] == [4.0, 5.0, 8.0]
    assert [p["user_month_text_1"]["requests_per_s"] for p in ours.out["passes"]] == [3.0, 6.0, 7.0]
    # the medians: neither side gets all the late (fast) passes
    assert theirs.out["grid"]["user_month_text_1"]["requests_per_s"] == 5.0
    assert ours.out["grid"]["user_month_text_1"]["requests_per_s"] == 6.0


def _sent_ts(line: str) -> int:
    return int(line.split("tmi-sent-ts=", 1)[1].split(";", 1)[0].split(" ", 1)[0])


def test_a_current_tree_ends_a_minute_before_now_in_the_current_month(tmp_path: Path) -> None:
    now = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    tree = write_tree(tmp_path, SMALL, now=now)
    assert (tree.year, tree.month, tree.days, tree.current) == (2026, 11, [27, 28, 29], True)
    today = channel_file(tmp_path, CHANNEL_ID, 2026, 11, 29).read_text().splitlines()
    assert len(today) == SMALL.lines_per_day
    day_start = int(datetime(2026, 11, 29, tzinfo=UTC).timestamp() * 1000)
    stamps = [_sent_ts(line) for line in today]
    assert stamps == sorted(stamps) and day_start <= stamps[0]
    assert stamps[-1] <= int(now.timestamp() * 1000) - 60_000
    # justlog's archiver gzips the past days only: never today's file, nor a user file of the current month
    assert tree.files() == [channel_file(tmp_path, CHANNEL_ID, 2026, 11, d) for d in (27, 28)]
    days = tree.channel_day_urls(json=True)
    assert len(days) == CURRENT_DAY_READS
    assert {u.path for u in days} == {channel_day_path(CHANNEL_ID, 2026, 11, 29) + "?json"}
    assert {u.lines for u in days} == {SMALL.lines_per_day}
    months = tree.user_month_urls()
    assert months and all(u.path.endswith("/2026/11") for u in months)


def test_a_current_tree_early_in_a_month_has_the_days_so_far() -> None:
    from lab.bench.justlog_tree import current_days

    assert current_days(3, date(2026, 12, 2)) == [1, 2]
    assert current_days(30, date(2026, 11, 29)) == list(range(1, 30))
    with pytest.raises(ValueError):
        current_days(31, date(2026, 11, 29))


def test_a_current_tree_needs_a_few_minutes_of_today(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a few minutes of today"):
        write_tree(tmp_path, SMALL, now=datetime(2026, 11, 29, 0, 0, 30, tzinfo=UTC))


def test_the_current_cases_rows_are_named_apart_and_hold_no_storage() -> None:
    justlog, chatlog = _side(1.0, 215.5), _side(0.5, 100.0)
    table = ratio_table(justlog, chatlog, Params(), current=True)
    assert [r["row"] for r in table] == [f"current_{r.key}" for r in rows(Params())]
    assert table[0]["label"] == "current user-month text, 1 client" and table[0]["short"] == "now text, 1"
    assert table[0]["ratio"] == 0.5


def test_the_summary_of_the_current_case_alone() -> None:
    justlog, chatlog = _side(1.0, 215.5), _side(0.5, 100.0)
    chatlog["load"] = {"micro_batches": 8_640, "trigger_ms": 10_000, "seconds": 9.5, "written": {}}
    data = {
        "year": 2026,
        "month": 11,
        "lines": 50_000,
        "days": [29],
        "users": 200,
        "line_bytes_mean": 500.0,
        "user_month_urls": 40,
        "user_month_lines_mean": 12.0,
        "channel_day_urls": CURRENT_DAY_READS,
    }
    result = {
        "current": {"data": data, "justlog": justlog, "chatlog": chatlog},
        "load_average_start": [1.0, 1.0, 1.0],
        "table": ratio_table(justlog, chatlog, Params(), current=True),
    }
    text = summary(result)
    assert "current (ends now): 50,000 lines (1 days of 2026-11)" in text
    row = "| current user-month text, 1 client | 100.0 req/s, p99 12 ms | 50.0 req/s, p99 12 ms | 0.50x |"
    assert row in text
    assert "8,640 micro-batches of 10 s" in text and "storage" not in text
