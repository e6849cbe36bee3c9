"""store/keys.py: channel and user keys (ids and logins never collide), the user a line is filed under (the
consent rule's), message ids as uuid bytes (a Twitch uuid its own, any other id a fixed uuid5, made without
``uuid.UUID`` and equal to it), the order of stored lines (Cassandra's order of ``(sent_at, uuid)``), and the
periods and parts of the partitions."""

from __future__ import annotations

import calendar
import functools
import itertools
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from consent.rule import whose
from core.testing import chat_events, twitch_event
from schemas.chat_event import ChatEvent
from store.keys import (
    DAY_MS,
    HALF_HOUR_MS,
    MESSAGE_ID_NAMESPACE,
    channel_key,
    channel_part,
    day_of,
    day_start_ms,
    days_of,
    event_channel_key,
    filed_under,
    is_canonical_uuid,
    key_id,
    line_order,
    login_key,
    message_id_bytes,
    message_uuid,
    month_end_ms,
    month_of,
    month_start_ms,
    months_of,
    user_key,
    user_part,
    uuid_text,
)
from tests.peer_lines import PEER_LINES
from tests.unit.store.stored_lines import NOW, events_of_peer_lines


def ms(*args: int) -> int:
    return calendar.timegm((*args, 0, 0, 0)[:6]) * 1000


# -- channel and user keys --------------------------------------------------------------------------------


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
    assert user_key(None, "JuN1oRRRR") == "login:jun1orrrr" == login_key("JuN1oRRRR")
    assert user_key(None, None) is None  # a server's CLEARCHAT: no user
    assert user_key("٣", None) == "id:٣"  # a digit, but not an ASCII one
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


def _every_kind() -> list[ChatEvent]:
    at = 1_790_000_000_000
    return [
        *chat_events(400, channels=3, now_ms=at),
        *chat_events(200, channels=2, now_ms=at, ids=False),
        *(e for _, e in events_of_peer_lines(NOW)),
        twitch_event("CLEARMSG", "chan0", sent_at=at, login="Someone", message_id="x"),
        twitch_event("CLEARCHAT", "chan0", sent_at=at),  # the whole chat: nobody's
        twitch_event("CLEARCHAT", "chan0", sent_at=at, text="bob"),  # a ban by login only
        twitch_event("CLEARCHAT", "chan0", sent_at=at, text="bob", user_id="x1"),  # an id that is no number
    ]


def test_a_line_is_filed_under_the_user_the_consent_rule_says_it_concerns() -> None:
    kinds = set()
    for event in _every_kind():
        assert filed_under(event) == user_key(*whose(event)), event.raw
        assert event_channel_key(event) == channel_key(event.channel_id, event.channel)
        kinds.add(event.kind)
    assert kinds >= {"PRIVMSG", "CLEARCHAT", "CLEARMSG"}
    assert not PEER_LINES.exists() or kinds >= {"USERNOTICE", "NOTICE"}


def test_what_a_moderation_line_is_filed_under() -> None:
    at = 1_790_000_000_000
    assert filed_under(twitch_event("CLEARCHAT", "c", sent_at=at, text="bob", user_id="42")) == "42"
    assert filed_under(twitch_event("CLEARCHAT", "c", sent_at=at, text="Bob")) == "login:bob"
    assert filed_under(twitch_event("CLEARCHAT", "c", sent_at=at)) is None
    deleted = twitch_event("CLEARMSG", "c", sent_at=at, login="Bob", text="hi", message_id="m")
    assert filed_under(deleted) == "login:bob"
    said = twitch_event("PRIVMSG", "c", sent_at=at, login="bob", user_id="x1", text="hi")
    assert filed_under(said) == "id:x1"


# -- message ids ------------------------------------------------------------------------------------------

TWITCH = "b34ccfc7-4977-403a-8a94-33c6bac34fb8"


def test_a_twitch_uuid_is_its_own_id_and_any_other_id_a_fixed_uuid5() -> None:
    assert message_uuid(TWITCH) == uuid.UUID(TWITCH) and is_canonical_uuid(TWITCH)
    hashed = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # core.irc_parse.line_hash: 32 hex digits, parses as a uuid
    assert message_uuid(hashed) == uuid.uuid5(MESSAGE_ID_NAMESPACE, hashed) != uuid.UUID(hashed)
    assert message_uuid(TWITCH.upper()) == uuid.uuid5(MESSAGE_ID_NAMESPACE, TWITCH.upper())
    assert message_uuid(TWITCH.upper()) != message_uuid(TWITCH)  # two spellings: two events, as before
    assert message_uuid("{" + TWITCH + "}") != uuid.UUID(TWITCH)
    assert not any(map(is_canonical_uuid, (TWITCH.upper(), hashed, "{" + TWITCH + "}", TWITCH + " ", "")))
    # pinned: changing the namespace would store every already-stored id-less event a second time
    assert uuid.uuid5(uuid.NAMESPACE_URL, "chatlog:message-id") == MESSAGE_ID_NAMESPACE
    assert str(message_uuid("abc")) == "7a64279c-6bba-5c98-a830-d53575e878ee"


_IDS = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.uuids().map(lambda u: u.hex),
    st.text(max_size=60),
    st.text(alphabet="0123456789abcdef-", min_size=36, max_size=36),
)


@settings(max_examples=500, deadline=None)
@given(_IDS)
@example("00000000-0000-0000-0000-000000000000")
@example("ffffffff-ffff-ffff-ffff-ffffffffffff")
@example("")
def test_message_id_bytes_are_the_bytes_of_the_uuid_uuid_makes(message_id: str) -> None:
    """``uuid.UUID(id)`` for a uuid in canonical text, ``uuid.uuid5(MESSAGE_ID_NAMESPACE, id)`` for any
    other id: the ids the tables of the layout before were keyed by."""
    try:
        canonical = str(uuid.UUID(message_id)) == message_id
    except ValueError:
        canonical = False
    expected = uuid.UUID(message_id) if canonical else uuid.uuid5(MESSAGE_ID_NAMESPACE, message_id)
    assert message_id_bytes(message_id) == expected.bytes
    assert is_canonical_uuid(message_id) is canonical
    assert uuid_text(message_id_bytes(message_id)) == str(expected)


def test_an_id_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(ValueError):
        message_id_bytes("a\ud800b")  # a lone surrogate: what Cassandra's text could not hold either


@given(st.binary(min_size=16, max_size=16))
def test_uuid_text_is_the_uuids_canonical_text(data: bytes) -> None:
    assert uuid_text(data) == str(uuid.UUID(bytes=data))


# -- the order of stored lines: Cassandra's order of (sent_at timestamp, message_id uuid) -------------------


_MASK64 = (1 << 64) - 1


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _cassandra_uuid_compare(a: bytes, b: bytes) -> int:
    """Cassandra's ``UUIDType.compareCustom`` (org.apache.cassandra.db.marshal.UUIDType), transcribed: the
    version first, then a time uuid by its reordered timestamp, any other by its most significant long
    (unsigned); then the least significant long, unsigned."""
    msb1, msb2 = int.from_bytes(a[:8], "big"), int.from_bytes(b[:8], "big")
    version1, version2 = (msb1 >> 12) & 0xF, (msb2 >> 12) & 0xF
    if version1 != version2:
        return version1 - version2
    if version1 == 1:

        def reorder(msb: int) -> int:
            """TimeUUIDType.reorderTimestampBytes: ``(input << 48) | ((input << 16) & 0xFFFF00000000L) |
            (input >>> 32)``, a signed long."""
            return _signed(((msb << 48) | ((msb << 16) & 0xFFFF00000000) | (msb >> 32)) & _MASK64)

        first, second = reorder(msb1), reorder(msb2)
    else:
        first, second = msb1, msb2
    if first != second:
        return -1 if first < second else 1
    lsb1, lsb2 = int.from_bytes(a[8:], "big"), int.from_bytes(b[8:], "big")
    return (lsb1 > lsb2) - (lsb1 < lsb2)


def _cassandra_row_compare(a: tuple[int, bytes], b: tuple[int, bytes]) -> int:
    """The clustering order ``(sent_at ASC, message_id ASC)`` of the tables of the layout before."""
    if a[0] != b[0]:
        return -1 if a[0] < b[0] else 1
    return _cassandra_uuid_compare(a[1], b[1])


def _uuid(version: int, data: bytes) -> bytes:
    """16 bytes of ``data`` stamped with ``version`` and the RFC 4122 variant."""
    raw = bytearray(data)
    raw[6] = (raw[6] & 0x0F) | (version << 4)
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


_ROW_IDS = st.one_of(
    st.builds(_uuid, st.sampled_from([1, 4, 5]), st.binary(min_size=16, max_size=16)),
    st.binary(min_size=16, max_size=16),  # any version nibble, any variant
    st.uuids(version=1).map(lambda u: u.bytes),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), _ROW_IDS), min_size=2, max_size=30))
def test_line_order_is_cassandras_order_of_the_rows(rows: list[tuple[int, bytes]]) -> None:
    by_cassandra = sorted(rows, key=functools.cmp_to_key(_cassandra_row_compare))
    by_line_order = sorted(rows, key=lambda row: line_order(*row))
    assert by_line_order == by_cassandra
    for a, b in itertools.pairwise(rows):  # and equal exactly when Cassandra finds them equal
        assert (line_order(*a) == line_order(*b)) == (_cassandra_row_compare(a, b) == 0)


def test_in_one_millisecond_a_time_uuid_comes_first_by_its_time_then_twitch_ids_then_hashed_ones() -> None:
    sent = 1_700_000_000_000
    early = uuid.UUID(fields=(0xFFFFFFFF, 0x0000, 0x1000, 0x80, 0x00, 0)).bytes  # v1, time low all ones
    late = uuid.UUID(fields=(0x00000000, 0x0001, 0x1000, 0x80, 0x00, 0)).bytes  # v1, a later time_mid
    twitch = uuid.UUID("00000000-0000-4000-8000-000000000001").bytes
    hashed = message_id_bytes("no uuid")
    assert sorted([hashed, twitch, late, early], key=lambda m: line_order(sent, m)) == [
        early,
        late,  # by the time, not the bytes (its bytes sort before `early`'s)
        twitch,
        hashed,
    ]
    assert late < early  # the bytes alone would have put it first
    assert line_order(sent - 1, hashed) < line_order(sent, early)  # the time first, always


# -- periods and parts -------------------------------------------------------------------------------------


def test_a_channel_day_is_a_utc_day_and_its_parts_its_half_hours() -> None:
    assert day_of(ms(1970, 1, 1)) == 0 and day_of(ms(1969, 12, 31, 23, 59, 59)) == -1
    day = day_of(ms(2026, 11, 21, 15, 4, 5))
    assert day_start_ms(day) == ms(2026, 11, 21) and day_start_ms(day + 1) - day_start_ms(day) == DAY_MS
    assert channel_part(ms(2026, 11, 21)) == 1 and channel_part(ms(2026, 11, 21, 0, 29, 59) + 999) == 1
    assert channel_part(ms(2026, 11, 21, 0, 30)) == 2 and channel_part(ms(2026, 11, 21, 23, 59, 59)) == 48
    parts = {channel_part(ms(2026, 11, 21) + i * HALF_HOUR_MS // 3) for i in range(3 * 48)}
    assert parts == set(range(1, 49))  # never 0: part 0 is the day's own


def test_days_of_a_range_are_every_day_it_touches() -> None:
    assert days_of(ms(2026, 11, 21, 23), ms(2026, 11, 22, 1)) == [
        day_of(ms(2026, 11, 21)),
        day_of(ms(2026, 11, 22)),
    ]
    assert days_of(ms(2026, 11, 21), ms(2026, 11, 22)) == [day_of(ms(2026, 11, 21))]  # until excluded
    assert days_of(ms(2026, 11, 21), ms(2026, 11, 21)) == [] == days_of(5, 4)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**12), ms(2200, 1, 1)), st.integers(1, 40 * DAY_MS))
def test_every_time_of_a_range_lies_in_one_of_its_days(since: int, span: int) -> None:
    days = days_of(since, since + span)
    assert days == list(range(days[0], days[-1] + 1))
    for t in (since, since + span // 2, since + span - 1):
        assert day_of(t) in days and day_start_ms(day_of(t)) <= t < day_start_ms(day_of(t) + 1)
    assert day_of(since) == days[0] and day_of(since + span - 1) == days[-1]


def test_user_months_are_calendar_months_and_their_parts_their_days() -> None:
    assert month_of(ms(2026, 11, 27, 8)) == 202611
    assert month_start_ms(202611) == ms(2026, 11, 1) and month_end_ms(202611) == ms(2026, 12, 1)
    assert month_end_ms(202612) == ms(2027, 1, 1)  # December ends in the next year
    assert month_of(ms(2024, 2, 29, 23, 59, 59) + 999) == 202402 and month_of(ms(2024, 3, 1)) == 202403
    assert month_of(ms(1969, 12, 31, 23)) == 196912
    assert user_part(ms(2024, 2, 1)) == 1 and user_part(ms(2024, 2, 29, 23)) == 29
    assert user_part(ms(2024, 3, 31, 23, 59, 59) + 999) == 31


@pytest.mark.parametrize(("year", "month"), [(2024, 1), (2024, 2), (2023, 2), (2024, 4), (2024, 12)])
def test_a_months_parts_are_its_days(year: int, month: int) -> None:
    days = calendar.monthrange(year, month)[1]
    start = datetime(year, month, 1, tzinfo=UTC)
    first = int(start.timestamp() * 1000)
    last = int((start + timedelta(days=days)).timestamp() * 1000)
    assert month_start_ms(month_of(first)) == first and month_end_ms(month_of(first)) == last
    seen = {user_part(first + h * 3_600_000) for h in range(days * 24)}
    assert seen == set(range(1, days + 1))
    assert {month_of(first + h * 3_600_000) for h in range(days * 24)} == {year * 100 + month}


def test_months_of_a_range_across_a_year_end() -> None:
    assert months_of(ms(2023, 12, 31, 23), ms(2024, 2, 1)) == [202312, 202401]
    assert months_of(ms(2024, 1, 9), ms(2024, 1, 9)) == []
    assert len(months_of(ms(2023, 1, 1), ms(2024, 1, 1))) == 12


@given(st.integers(0, ms(2200, 1, 1)), st.integers(1, 400 * DAY_MS))
@settings(max_examples=200, deadline=None)
def test_every_time_of_a_range_lies_in_one_of_its_months(since: int, span: int) -> None:
    months = months_of(since, since + span)
    assert months == sorted(set(months))
    for t in (since, since + span // 2, since + span - 1):
        assert month_of(t) in months
        assert month_start_ms(month_of(t)) <= t < month_end_ms(month_of(t))
    assert month_start_ms(months[0]) <= since and month_end_ms(months[-1]) >= since + span
    assert all(month_end_ms(a) == month_start_ms(b) for a, b in itertools.pairwise(months))
