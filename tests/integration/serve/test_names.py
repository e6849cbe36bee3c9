"""The name history on the real Cassandra: written by :mod:`store.write` (as a sink's task) from the events'
ids, read back by store/names.py and `chatlog names`. A renamed user and a renamed channel keep one
history by id and by either name; a login taken by another id lists both ids; replays change nothing."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from core.cql import connect
from schemas.chat_event import ChatEvent
from sink.settings import SinkSettings
from store.names import IdSeen, NameSeen, channel_ids, channel_names, user_ids, user_names
from store.write import NAME_TABLES as NAME_COLUMNS
from store.write import Written
from tests.integration.serve.events import privmsg, write

pytestmark = pytest.mark.integration


def name_history(session: Any, ks: str, user_id: str) -> list[NameSeen]:
    return asyncio.run(user_names(session, user_id, ks))


def channel_name_history(session: Any, ks: str, channel_id: str) -> list[NameSeen]:
    return asyncio.run(channel_names(session, channel_id, ks))


def user_ids_for_login(session: Any, ks: str, login: str) -> list[IdSeen]:
    return asyncio.run(user_ids(session, login, ks))


def channel_ids_for_login(session: Any, ks: str, login: str) -> list[IdSeen]:
    return asyncio.run(channel_ids(session, login, ks))


HOUR = 3_600_000
DAY = 24 * HOUR
T0 = 1_795_273_200_000 - 1_795_273_200_000 % HOUR  # the start of an hour in 2026
NAME_TABLES = tuple(NAME_COLUMNS)
USER_NAMES, USER_IDS, CHANNEL_NAMES, CHANNEL_IDS = NAME_TABLES
"""The name history's tables (:data:`store.write.NAME_TABLES`): an id's logins, a login's ids."""


def _event(
    n: int, at: int, login: str | None, user_id: str | None, channel: str, channel_id: str | None
) -> ChatEvent:
    return privmsg(
        channel,
        at,
        login,
        f"message {n}",
        user_id=user_id,
        room_id=channel_id,
        message_id=f"m{n}",
        display_name=login.capitalize() if login and user_id else None,
        received_after_ms=40,
    )


def _story() -> list[ChatEvent]:
    """User 1001 is `oldname` for days 0-2 and `newname` from day 3; `oldname` is taken by user 2002 on
    day 10. Channel 500 is `oldchan` until day 4, then `newchan`. A plain IRC user in a plain channel."""
    events = [
        _event(1, T0 + 5, "oldname", "1001", "oldchan", "500"),
        _event(2, T0 + DAY, "oldname", "1001", "oldchan", "500"),
        _event(3, T0 + 2 * DAY + 7, "oldname", "1001", "oldchan", "500"),
        _event(4, T0 + 3 * DAY, "newname", "1001", "oldchan", "500"),
        _event(5, T0 + 4 * DAY + 9, "newname", "1001", "newchan", "500"),
        _event(6, T0 + 6 * DAY, "newname", "1001", "newchan", "500"),
        _event(7, T0 + 6 * DAY + 20 * 60_000, "newname", "1001", "newchan", "500"),  # the same hour as 6
        _event(8, T0 + 10 * DAY, "oldname", "2002", "newchan", "500"),
        _event(9, T0 + 11 * DAY, "oldname", "2002", "newchan", "500"),
        _event(10, T0 + 2 * DAY, "ircuser", None, "plainchan", None),
        _event(11, T0 + 3 * DAY, "ircuser", None, "oldchan", None),
    ]
    random.Random(7).shuffle(events)  # the history does not depend on the order events arrive in
    return events


def _write(settings: SinkSettings, events: list[ChatEvent]) -> Written:
    """Write ``events`` as a new process's task (a new name cache: every name is written)."""
    return write(settings, events)


@pytest.fixture
def session(sink_settings: SinkSettings) -> Iterator[Any]:
    cluster, session = connect(sink_settings)
    yield session
    cluster.shutdown()


def _dump(session: Any, keyspace: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every cell of the name tables with its write time."""
    out = {}
    for table in NAME_TABLES:
        meta = session.cluster.metadata.keyspaces[keyspace].tables[table]
        columns = ", ".join(meta.columns)
        rows = session.execute(
            f"SELECT {columns}, writetime(first_seen), writetime(last_seen), ttl(last_seen) "
            f"FROM {keyspace}.{table}"
        )
        out[table] = sorted(tuple(r) for r in rows)
    return out


def test_a_renamed_user_and_channel_keep_one_history_by_id_and_by_either_name(
    sink_settings: SinkSettings, session: Any
) -> None:
    ks = sink_settings.cassandra_keyspace
    _write(sink_settings, _story())

    old, new = name_history(session, ks, "1001")
    assert old == NameSeen("oldname", "Oldname", T0 + 5, T0 + 2 * DAY + 7)
    assert new == NameSeen("newname", "Newname", T0 + 3 * DAY, new.last_seen_ms)
    assert new.last_seen_ms in (T0 + 6 * DAY, T0 + 6 * DAY + 20 * 60_000)  # hour precision: 6 or 7
    assert name_history(session, ks, "2002") == [NameSeen("oldname", "Oldname", T0 + 10 * DAY, T0 + 11 * DAY)]
    assert user_ids_for_login(session, ks, "oldname") == [
        IdSeen("1001", T0 + 5, T0 + 2 * DAY + 7),
        IdSeen("2002", T0 + 10 * DAY, T0 + 11 * DAY),
    ]
    assert user_ids_for_login(session, ks, "NewName") == [IdSeen("1001", T0 + 3 * DAY, new.last_seen_ms)]
    assert channel_name_history(session, ks, "500") == [
        NameSeen("oldchan", None, T0 + 5, T0 + 3 * DAY),
        NameSeen("newchan", None, T0 + 4 * DAY + 9, T0 + 11 * DAY),
    ]
    assert channel_ids_for_login(session, ks, "#oldchan") == [IdSeen("500", T0 + 5, T0 + 3 * DAY)]
    assert channel_ids_for_login(session, ks, "newchan") == [IdSeen("500", T0 + 4 * DAY + 9, T0 + 11 * DAY)]


def test_events_without_ids_leave_no_name_rows(sink_settings: SinkSettings, session: Any) -> None:
    ks = sink_settings.cassandra_keyspace
    _write(sink_settings, [e for e in _story() if e.user_id is None])
    assert _dump(session, ks) == {table: [] for table in NAME_TABLES}
    assert user_ids_for_login(session, ks, "ircuser") == []
    assert channel_ids_for_login(session, ks, "plainchan") == []


def test_replaying_the_events_in_another_order_changes_no_cell(
    sink_settings: SinkSettings, session: Any
) -> None:
    ks = sink_settings.cassandra_keyspace
    events = _story()
    _write(sink_settings, events)
    before = _dump(session, ks)
    assert len(before[USER_NAMES]) == 3 and len(before[CHANNEL_IDS]) == 2
    assert _write(sink_settings, events[::-1]).rows[USER_NAMES] >= 6  # written again, in another order
    assert _write(sink_settings, events[3:] + events[:3]).rows[CHANNEL_NAMES] >= 4
    assert _dump(session, ks) == before


def _app() -> typer.Typer:
    import chatlog.cli.names

    app = typer.Typer()
    app.callback()(lambda: None)  # a group, as on the main app: `names` is a sub-command
    chatlog.cli.names.register(app)
    return app


def test_chatlog_names_prints_the_history_by_login_or_id_as_text_and_json(
    sink_settings: SinkSettings, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(sink_settings, _story())
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", sink_settings.cassandra_keyspace)
    runner = CliRunner()

    text = runner.invoke(_app(), ["names", "oldname"])
    assert text.exit_code == 0, text.output
    assert text.output.splitlines() == [
        "user id 1001",
        "  oldname (Oldname): 2026-11-21 15:00:00 .. 2026-11-23 15:00:00",
        "  newname (Newname): 2026-11-24 15:00:00 .. 2026-11-27 15:" + text.output.split("11-27 15:")[1][:5],
        "user id 2002",
        "  oldname (Oldname): 2026-12-01 15:00:00 .. 2026-12-02 15:00:00",
    ]
    by_id = runner.invoke(_app(), ["names", "1001", "--json"])
    assert by_id.exit_code == 0, by_id.output
    found = json.loads(by_id.output)
    assert found["kind"] == "user" and [i["id"] for i in found["ids"]] == ["1001"]
    assert [(n["login"], n["first_seen"], n["last_seen"] // HOUR) for n in found["ids"][0]["names"]] == [
        ("oldname", T0 + 5, (T0 + 2 * DAY) // HOUR),
        ("newname", T0 + 3 * DAY, (T0 + 6 * DAY) // HOUR),
    ]
    channel = runner.invoke(_app(), ["names", "#newchan", "--channel"])
    assert channel.exit_code == 0, channel.output
    assert channel.output.splitlines()[0] == "channel id 500"
    assert [line.split(":")[0].strip() for line in channel.output.splitlines()[1:]] == ["oldchan", "newchan"]


def test_chatlog_names_of_an_unknown_name_is_one_line_and_exit_1(
    sink_settings: SinkSettings, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(sink_settings, _story())
    monkeypatch.setenv("CHATLOG_CASSANDRA_KEYSPACE", sink_settings.cassandra_keyspace)
    for args in (["names", "nobody"], ["names", "12345", "--channel"], ["names", "ircuser"]):
        result = CliRunner().invoke(_app(), args)
        assert result.exit_code == 1, result.output
        assert len(result.output.strip().splitlines()) == 1 and "no " in result.output
