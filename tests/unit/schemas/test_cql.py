"""CHATLOG_CASSANDRA_REPLICATION goes into CQL only as a parsed, re-rendered replication map (issue 13,
item 10): a ``;``, a quote or a comment cannot reach the statement. The keys of the id-keyed tables
(issue 17): ids and logins never collide, a month is its half-days' user periods, partitions stay
bounded."""

from __future__ import annotations

import calendar
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import SettingsError
from core.settings import CassandraSettings, load
from schemas.cql import (
    BUCKET_MS,
    CHANNEL_MSGS_PER_S,
    CHANNEL_ROW_BYTES,
    MESSAGE_ID_NAMESPACE,
    MODERATOR_MSGS_PER_S,
    PARTITION_LIMIT_BYTES,
    SPILL_WRITERS,
    USER_MONTH_ROWS,
    USER_PERIOD_MS,
    channel_key,
    half_days_of,
    is_half_day,
    is_month_period,
    key_id,
    message_uuid,
    month_end_ms,
    month_of,
    month_period,
    month_periods,
    month_start_ms,
    normalize_replication,
    period_start_ms,
    replication_map,
    statements,
    user_key,
    user_period,
    user_periods,
)

DEFAULT = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (DEFAULT, DEFAULT),
        (
            '{"class":"SimpleStrategy","replication_factor":3}',
            "{'class': 'SimpleStrategy', 'replication_factor': 3}",
        ),
        (
            "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'us-east.2': '3/1'}",
            "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'us-east.2': '3/1'}",
        ),
        (
            "  {'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '2'}  ",
            "{'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '2'}",
        ),
    ],
)
def test_valid_maps_are_rendered_back_from_the_parsed_values(text: str, canonical: str) -> None:
    assert normalize_replication(text) == canonical


@pytest.mark.parametrize(
    "text",
    [
        DEFAULT + "; DROP KEYSPACE chatlog",
        "{'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = false",
        "{'class': 'SimpleStrategy', 'replication_factor': '1; DROP KEYSPACE chatlog'}",
        "{'class': 'SimpleStrategy', 'replication_factor': \"1' } ; DROP KEYSPACE chatlog; --\"}",
        "{'class': 'SimpleStrategy', \"x'y\": 1}",
        "{'class': 'SimpleStrategy', 'replication_factor': 1} -- comment",
        "{'class': 'EverywhereStrategy'}",
        "{'class': 'org.apache.cassandra.locator.X;Y'}",
        "{'replication_factor': 1}",
        "{'class': 'SimpleStrategy', 'replication_factor': True}",
        "{'class': 'SimpleStrategy', 'replication_factor': -1}",
        "{'class': 'SimpleStrategy', 'replication_factor': 1.5}",
        "{'class': 'SimpleStrategy', 'replication_factor': [1]}",
        "{'class': 'SimpleStrategy', 1: 1}",
        "__import__('os').system('true')",
        "['class', 'SimpleStrategy']",
        "",
        "{" * 5000,
        "{'class': 'SimpleStrategy', 'x': '" + "a" * 3000 + "'}",
    ],
)
def test_anything_else_is_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        replication_map(text)
    with pytest.raises(ValueError):
        statements("chatlog", text)  # the schema refuses it too, whatever the caller validated


def test_the_setting_is_validated_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_CASSANDRA_REPLICATION", DEFAULT + "; DROP KEYSPACE chatlog")
    with pytest.raises(SettingsError) as info:
        load(CassandraSettings)
    assert str(info.value).startswith("setting cassandra_replication (CHATLOG_CASSANDRA_REPLICATION): ")
    monkeypatch.setenv("CHATLOG_CASSANDRA_REPLICATION", '{"class": "NetworkTopologyStrategy", "dc1": 3}')
    assert load(CassandraSettings).cassandra_replication == "{'class': 'NetworkTopologyStrategy', 'dc1': 3}"


def test_the_keyspace_statement_holds_exactly_the_rendered_map() -> None:
    stmts = statements("chatlog", '{"class": "NetworkTopologyStrategy", "dc1": 3}')
    assert stmts == statements("chatlog", "{'class': 'NetworkTopologyStrategy', 'dc1': 3}")
    create = stmts[0]
    assert create.startswith("CREATE KEYSPACE IF NOT EXISTS chatlog")
    assert create.endswith("WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}")
    assert len(stmts) == len(statements("chatlog", DEFAULT))


# -- keys of the id-keyed tables (issue 17) ------------------------------------------------------------


def ms(*args: int) -> int:
    return calendar.timegm((*args, 0, 0, 0)[:6]) * 1000


def test_keys_are_the_numeric_id_else_the_login_under_a_prefix() -> None:
    assert channel_key("11148817", "pajlada") == "11148817"
    assert channel_key(None, "pajlada") == channel_key("", "Pajlada") == "login:pajlada"
    assert channel_key("not-a-number", "x") == "id:not-a-number"
    assert [key_id(channel_key(i, "x")) for i in ("11148817", "not-a-number", None)] == [
        "11148817",
        "not-a-number",
        None,
    ]
    assert key_id(user_key("id:x", None) or "") == "id:x"  # an id that looks like a key: itself
    assert user_key("29", "jun1orrrr") == "29"
    assert user_key(None, "JuN1oRRRR") == "login:jun1orrrr"
    assert user_key(None, None) is None  # a server's CLEARCHAT: no user row
    with pytest.raises(ValueError):
        channel_key(None, "")


_NAMES = st.text(min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), _NAMES), _NAMES, st.one_of(st.none(), _NAMES), _NAMES)
def test_an_id_key_and_a_login_key_never_collide(
    id_a: str | None, login_a: str, id_b: str | None, login_b: str
) -> None:
    """Two keys are equal only when both are id keys of the same id, or both login keys of one login."""
    for key in (channel_key, user_key):
        same = key(id_a, login_a) == key(id_b, login_b)
        if id_a and id_b:
            assert same == (id_a == id_b)
        elif not id_a and not id_b:
            assert same == (login_a.lower() == login_b.lower())
        else:
            assert not same


def test_a_twitch_uuid_is_its_own_key_and_any_other_id_a_fixed_uuid5() -> None:
    twitch = "b34ccfc7-4977-403a-8a94-33c6bac34fb8"
    assert message_uuid(twitch) == uuid.UUID(twitch)
    hashed = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # core.irc_parse.line_hash: 32 hex digits, parses as a uuid
    assert message_uuid(hashed) == uuid.uuid5(MESSAGE_ID_NAMESPACE, hashed) != uuid.UUID(hashed)
    assert message_uuid(twitch.upper()) == uuid.uuid5(MESSAGE_ID_NAMESPACE, twitch.upper())
    assert message_uuid(twitch.upper()) != message_uuid(twitch)  # two spellings: two events, as today
    assert message_uuid("{" + twitch + "}") != uuid.UUID(twitch)
    # pinned: changing the namespace would store every already-stored id-less event a second time
    assert uuid.uuid5(uuid.NAMESPACE_URL, "chatlog:message-id") == MESSAGE_ID_NAMESPACE
    assert str(message_uuid("abc")) == "7a64279c-6bba-5c98-a830-d53575e878ee"


def test_user_periods_are_half_utc_days() -> None:
    assert USER_PERIOD_MS == 12 * 3_600_000
    assert user_period(ms(2024, 2, 1)) == user_period(ms(2024, 2, 1, 11, 59, 59) + 999)
    assert user_period(ms(2024, 2, 1, 12)) == user_period(ms(2024, 2, 1)) + 1
    assert period_start_ms(user_period(ms(2024, 2, 1, 17, 3))) == ms(2024, 2, 1, 12)
    assert user_period(ms(1969, 12, 31, 23, 59, 59)) == -1  # before the epoch too
    # below every period of the old pointer rows (yyyymm * 10 + part, still in old keyspaces) until 3999
    assert user_period(ms(3999, 12, 31, 23)) < 1970_01_0


@pytest.mark.parametrize(("year", "month"), [(2024, 1), (2024, 2), (2023, 2), (2024, 4), (2024, 12)])
def test_a_calendar_month_is_exactly_its_half_days(year: int, month: int) -> None:
    days = calendar.monthrange(year, month)[1]
    start = datetime(year, month, 1, tzinfo=UTC)
    until = start + timedelta(days=days)
    first, last = int(start.timestamp() * 1000), int(until.timestamp() * 1000)
    periods = user_periods(first, last)
    assert len(periods) == 2 * days and periods == list(range(periods[0], periods[0] + 2 * days))
    assert period_start_ms(periods[0]) == first and period_start_ms(periods[-1] + 1) == last
    seen = sorted({user_period(first + h * 3_600_000) for h in range(days * 24)})
    assert seen == periods  # every hour of the month lands in one of them, each is used
    assert user_period(last) not in periods


def test_a_range_across_a_month_and_a_year_end() -> None:
    assert user_periods(ms(2023, 12, 31, 23), ms(2024, 1, 1, 1)) == [
        user_period(ms(2023, 12, 31, 23)),
        user_period(ms(2024, 1, 1)),
    ]
    assert user_periods(ms(2024, 1, 9), ms(2024, 1, 9) + 1) == [user_period(ms(2024, 1, 9))]
    before = user_periods(ms(2024, 1, 9) - 1, ms(2024, 1, 9))
    assert before == [user_period(ms(2024, 1, 8, 12))]  # until is excluded
    assert user_periods(ms(2024, 1, 9), ms(2024, 1, 9)) == []
    assert len(user_periods(ms(2023, 1, 1), ms(2024, 1, 1))) == 730


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4_102_444_800_000), st.integers(1, 200 * 86_400_000))
def test_user_periods_are_exactly_the_periods_of_the_range(since: int, span: int) -> None:
    periods = user_periods(since, since + span)
    assert periods == sorted(set(periods))
    assert periods[0] == user_period(since) and periods[-1] == user_period(since + span - 1)
    step = 6 * 3_600_000
    assert {user_period(t) for t in range(since, since + span, step)} <= set(periods)


def test_the_partitions_stay_within_the_bound_at_the_limits() -> None:
    """The layout's largest partitions at Twitch's moderator limit and a 300 msg/s channel: every row holds
    the whole line (the worst case: nothing stripped)."""
    user_rows = USER_PERIOD_MS / 1000 * MODERATOR_MSGS_PER_S
    assert round(user_rows) == 144_000
    assert user_rows * CHANNEL_ROW_BYTES <= PARTITION_LIMIT_BYTES  # 77.7 MiB
    channel_rows = BUCKET_MS / 1000 * CHANNEL_MSGS_PER_S
    assert channel_rows * CHANNEL_ROW_BYTES <= PARTITION_LIMIT_BYTES  # 48.5 MiB
    # what the bound rules out: a whole day of a user at the limit in one partition
    assert 2 * user_rows * CHANNEL_ROW_BYTES > PARTITION_LIMIT_BYTES


def test_a_month_partition_stays_within_the_bound_at_its_cap() -> None:
    """A user-month past the cap spills into half days: the month partition holds at most the cap of each
    of :data:`SPILL_WRITERS` sink processes; what a month at the moderator limit would hold is far more."""
    assert SPILL_WRITERS * USER_MONTH_ROWS * CHANNEL_ROW_BYTES <= PARTITION_LIMIT_BYTES  # 97.1 MiB
    month_at_the_limit = 31 * 86_400 * MODERATOR_MSGS_PER_S
    assert month_at_the_limit * CHANNEL_ROW_BYTES > 40 * PARTITION_LIMIT_BYTES


def test_month_periods_name_calendar_months_apart_from_half_days() -> None:
    assert month_period(ms(2026, 11, 27, 8)) == 20261100
    assert month_start_ms(20261100) == ms(2026, 11, 1) and month_end_ms(20261100) == ms(2026, 12, 1)
    assert month_end_ms(20261200) == ms(2027, 1, 1)  # December ends in the next year
    assert month_period(ms(2024, 2, 29, 23, 59, 59) + 999) == 20240200
    assert month_period(ms(2024, 3, 1)) == 20240300
    assert month_period(ms(1969, 12, 31, 23)) == 19691200
    # never a half day nor an old pointer period (yyyymm * 10 + part), up to the end of year 9999
    assert is_month_period(month_period(ms(1970, 1, 1))) and not is_half_day(month_period(ms(1970, 1, 1)))
    assert is_half_day(user_period(ms(3000, 1, 1))) and not is_half_day(202411 * 10 + 1)
    assert not is_month_period(user_period(ms(9999, 12, 31, 23))) and not is_month_period(999_912 * 10 + 3)
    assert month_of(user_period(ms(2024, 1, 31, 13))) == 20240100 and month_of(20240100) == 20240100


def test_month_periods_and_their_half_days_cover_exactly_the_range() -> None:
    assert month_periods(ms(2023, 12, 31, 23), ms(2024, 2, 1)) == [20231200, 20240100]
    assert month_periods(ms(2024, 1, 9), ms(2024, 1, 9)) == []
    assert len(month_periods(ms(2023, 1, 1), ms(2024, 1, 1))) == 12
    assert half_days_of(20240200, 0, ms(2100, 1, 1)) == user_periods(ms(2024, 2, 1), ms(2024, 3, 1))
    assert len(half_days_of(20240200, 0, ms(2100, 1, 1))) == 58  # a leap February
    assert half_days_of(20240200, ms(2024, 2, 10, 13), ms(2024, 2, 11)) == [user_period(ms(2024, 2, 10, 12))]
    assert half_days_of(20240300, ms(2024, 2, 10), ms(2024, 2, 11)) == []


@given(st.integers(0, ms(2200, 1, 1)), st.integers(1, 400 * 86_400_000))
@settings(max_examples=200, deadline=None)
def test_every_time_of_a_range_lies_in_one_of_its_months(since: int, span: int) -> None:
    months = month_periods(since, since + span)
    assert months == sorted(set(months))
    for t in (since, since + span // 2, since + span - 1):
        assert month_period(t) in months
        assert month_start_ms(month_period(t)) <= t < month_end_ms(month_period(t))
    assert month_start_ms(months[0]) <= since and month_end_ms(months[-1]) >= since + span


RESULTS = Path(__file__).resolve().parents[3] / "results" / "bench_storage.json"


def test_the_bound_holds_with_the_latest_measurement() -> None:
    if not RESULTS.exists():
        pytest.skip(f"{RESULTS} is not here (chatlog bench storage writes it)")
    layouts = {item["layout"]: item for item in json.loads(RESULTS.read_text())["layouts"]}
    if "C64" not in layouts:
        pytest.skip("the last chatlog bench storage did not measure C64 (the line in both tables)")
    tables = layouts["C64"]["tables"]
    for table in ("chat_by_user", "chat_by_channel"):
        assert tables[table]["row_bytes_in_large_partition"] <= CHANNEL_ROW_BYTES * 1.05
    assert USER_PERIOD_MS / 1000 * MODERATOR_MSGS_PER_S * CHANNEL_ROW_BYTES <= PARTITION_LIMIT_BYTES
