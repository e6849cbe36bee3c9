"""A keyspace the sink's executor filled with chat events over several channels, days and user months
(user5, :data:`TARGET_ID`, the one erased), and what is stored of them, read back through the storage's
own readers (:mod:`store.scan`: every line of both copies; :class:`store.read.LogReader`: what a reader
finds; :mod:`store.names`: the name history)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from core.settings import StackSettings
from core.testing import chat_events, twitch_event
from schemas.chat_event import ChatEvent, encode
from sink.settings import SinkSettings
from sink.writer.collaborators import Collaborators, write_options
from sink.writer.partition import write_partition
from store import names
from store.keys import event_channel_key, filed_under, message_uuid
from store.protocol import ById
from store.read import LogReader
from store.scan import stored_lines
from store.stored_line import restore
from store.write import Caches, TaskWrite, close_sessions, worker_session

DAY_MS = 86_400_000
BASE_MS = 1_790_000_000_000 - 1_790_000_000_000 % 300_000  # 2026-09-21 14:10 UTC
TARGET_ID = "1005"
"""user5: sends messages, is timed out (CLEARCHAT with target-user-id), has messages deleted (CLEARMSG,
by login only)."""
TARGET_LOGIN = "user5"
TARGET_KEYS: Final = frozenset({TARGET_ID, f"login:{TARGET_LOGIN}"})
"""The user keys user5's lines are filed under: its id, and its login (a CLEARMSG names it by login only)."""
CHANNELS: Final = {"500": "chan0", "501": "chan1", "502": "chan2"}
USERS: Final = {str(1000 + k): f"user{k}" for k in range(23)}
TASKS: Final = 2
"""Each time's events are written by this many tasks (micro-batches, as the sink writes them): a day and a
month are then several blocks."""


@dataclass(frozen=True)
class Filled:
    settings: SinkSettings
    events: list[ChatEvent]

    def ids(self, *, channel: str | None = None, user: bool = False) -> Counter[str]:
        """The message uuids (text) of the events (each event once): of one channel id, or with a
        filed-under user (what the user copy holds) only."""
        return Counter(
            str(message_uuid(e.message_id))
            for e in self.events
            if channel in (None, e.channel_id) and (not user or filed_under(e) is not None)
        )

    def channel_of(self) -> dict[str, str]:
        """Message uuid (text) -> the channel key of its event."""
        return {str(message_uuid(e.message_id)): event_channel_key(e) for e in self.events}


def _privmsg(channel: int, i: int, at: int, login: str, user_id: str, text: str) -> ChatEvent:
    """A PRIVMSG in ``chan<channel>`` (room id 500 + ``channel``), its message id the ``i``-th of the
    channel's."""
    return twitch_event(
        "PRIVMSG",
        f"chan{channel}",
        sent_at=at,
        login=login,
        user_id=user_id,
        room_id=str(500 + channel),
        text=text,
        message_id=f"{i:08d}-0000-4000-8000-{channel + 1:012d}",
    )


def lone_events() -> list[ChatEvent]:
    """A block of chan0 that holds only user5's lines (written by a task of its own), and in chan1 a run of
    three of user5's lines between two of user7's; a deleted message of user5's in chan2 (by login only)."""
    lone_at = BASE_MS - 2 * 3_600_000
    run_at = BASE_MS - 3 * 3_600_000
    out = [_privmsg(0, i, lone_at + i * 1000, TARGET_LOGIN, TARGET_ID, f"alone {i}") for i in range(4)]
    for i, login in enumerate(["user7", TARGET_LOGIN, TARGET_LOGIN, TARGET_LOGIN, "user7"]):
        user_id = TARGET_ID if login == TARGET_LOGIN else "1007"
        out.append(_privmsg(1, i, run_at + i * 1000, login, user_id, f"run {i}"))
    out.append(  # a moderator deleted a message of user5's: the line names user5 by login only
        twitch_event(
            "CLEARMSG",
            "chan2",
            sent_at=run_at + 7000,
            login=TARGET_LOGIN,
            room_id="502",
            text="run 2",
            message_id="00000002-0000-4000-8000-000000000002",
        )
    )
    return out


def batches() -> list[list[ChatEvent]]:
    """600 events on 3 channels at each of 5 times 8 days apart (5 days, two UTC months), each time's written
    by :data:`TASKS` tasks, then :func:`lone_events` by two tasks of their own (chan0's, the others)."""
    out: list[list[ChatEvent]] = []
    for k in range(5):
        events = chat_events(600, channels=3, now_ms=BASE_MS - k * (8 * DAY_MS + 420_000), id_prefix=f"b{k}-")
        size = -(-len(events) // TASKS)
        out += [events[i : i + size] for i in range(0, len(events), size)]
    lone = lone_events()
    return [*out, lone[:4], lone[4:]]


def write(settings: SinkSettings, events: list[ChatEvent], caches: Caches | None = None) -> None:
    """``events`` written by one task of the sink's executor, wired as in production but with ``caches``
    (what the process wrote lately; a new one if not given): this test process writes many keyspaces, and
    a name the process wrote into another keyspace within the hour would not be written into this one."""
    session = worker_session(settings, settings.sink_cassandra_retry_s, settings.sink_cassandra_timeout_s)
    options = write_options(settings)
    used = Caches() if caches is None else caches
    wiring = Collaborators(lambda: TaskWrite(session, options, used), None)
    stats = write_partition(((encode(e), None, None) for e in events), settings, wiring)
    assert (stats.events, stats.deadletters) == (len(events), 0)


def fill(keyspace: str, tmp_path: Path) -> Filled:
    """:func:`batches` written into ``keyspace`` by the sink's executor."""
    values: dict[str, Any] = {
        "cassandra_keyspace": keyspace,
        "sink_checkpoint": str(tmp_path / "checkpoint"),
        "sink_metrics_port": 0,
    }
    settings = SinkSettings(**values)
    events: list[ChatEvent] = []
    caches = Caches()  # one writing process
    try:
        for batch in batches():
            write(settings, batch, caches)
            events += batch
    finally:
        close_sessions()
    return Filled(settings, events)


# -- what is stored ----------------------------------------------------------------------------------


Copy = Counter[tuple[str, str | None]]
"""(message uuid as text, the user key the line is filed under) -> how many blocks hold that line."""


@dataclass(frozen=True)
class Stored:
    """What a small keyspace holds, read through the storage's readers."""

    channel: Copy
    """Every line of the channel copy (a channel's days)."""
    user: Copy
    """Every line of the user copy (a user's months in a channel)."""
    lines: list[str]
    """Every line of both copies as it was received (restored)."""
    months: dict[tuple[str, str], list[tuple[int, int]]]
    """(channel id, user id or login) -> the months a reader finds the user's lines in."""
    days: dict[str, int]
    """Channel id -> how many days a reader finds its lines in."""
    channels: list[str]
    """The channels a reader lists (their ids)."""
    user_names: dict[str, list[str]]
    """User id -> its logins in the name history (only ids with any)."""
    user_ids: dict[str, list[str]]
    """Login -> the user ids it belonged to (only logins with any)."""
    channel_names: dict[str, list[str]]
    channel_ids: dict[str, list[str]]

    def ids(self, copy: str, *, keys: frozenset[str] | None = None) -> Copy:
        """One copy's lines (``"channel"`` or ``"user"``), those filed under ``keys`` only if given."""
        found: Copy = self.channel if copy == "channel" else self.user
        return Counter({k: n for k, n in found.items() if keys is None or k[1] in keys})

    def messages(self, copy: str) -> Counter[str]:
        """One copy's message uuids (text), each as often as blocks hold it."""
        found: Copy = self.channel if copy == "channel" else self.user
        out: Counter[str] = Counter()
        for (mid, _who), n in found.items():
            out[mid] += n
        return out

    def without(self, copy: str, ids: set[str]) -> Copy:
        """One copy's lines but those of the message uuids ``ids``."""
        found: Copy = self.channel if copy == "channel" else self.user
        return Counter({k: n for k, n in found.items() if k[0] not in ids})


def _copy(session: Any, keyspace: str, copy: str, lines: list[str]) -> Copy:
    out: Copy = Counter()
    for sent, mid, stored, _received, _split, who in stored_lines(session, keyspace, copy):
        text = str(uuid.UUID(bytes=mid))
        out[(text, who)] += 1
        lines.append(restore(stored, text, sent))
    return out


def read_stored(session: Any, keyspace: str) -> Stored:
    """Every line of both copies, what a reader finds of each channel and user, and the name history."""
    lines: list[str] = []
    channel = _copy(session, keyspace, "channel", lines)
    user = _copy(session, keyspace, "user", lines)

    async def main() -> Stored:
        reader = LogReader(session, channels_ttl_s=0)
        who: list[Any] = [ById(i, login) for i, login in USERS.items()] + [TARGET_LOGIN]
        pairs = [(c, u) for c in CHANNELS for u in who]
        months = await asyncio.gather(*(reader.user_months(ById(c, CHANNELS[c]), u) for c, u in pairs))
        days = await asyncio.gather(*(reader.channel_days(ById(c, CHANNELS[c])) for c in CHANNELS))
        listed = await reader.channels()

        async def history(lookup: Any, keys: list[str], value: str) -> dict[str, list[str]]:
            found = await asyncio.gather(*(lookup(session, k, keyspace) for k in keys))
            return {k: sorted(getattr(x, value) for x in f) for k, f in zip(keys, found, strict=True) if f}

        return Stored(
            channel=channel,
            user=user,
            lines=lines,
            months={
                (c, u.id if isinstance(u, ById) else u): m for (c, u), m in zip(pairs, months, strict=True)
            },
            days={c: len(d) for c, d in zip(CHANNELS, days, strict=True)},
            channels=sorted(c.channel_id or c.login for c in listed),
            user_names=await history(names.user_names, list(USERS), "login"),
            user_ids=await history(names.user_ids, list(USERS.values()), "id"),
            channel_names=await history(names.channel_names, list(CHANNELS), "login"),
            channel_ids=await history(names.channel_ids, list(CHANNELS.values()), "id"),
        )

    return asyncio.run(main())


@pytest.fixture
def filled(fresh_keyspace: StackSettings, tmp_path: Path) -> Filled:
    """A fresh keyspace filled (:func:`fill`)."""
    return fill(fresh_keyspace.cassandra_keyspace, tmp_path)


@pytest.fixture
def session(filled: Filled) -> Iterator[Any]:
    """A session on the filled keyspace."""
    from core.cql import connect

    cluster, session = connect(filled.settings, keyspace=filled.settings.cassandra_keyspace)
    try:
        yield session
    finally:
        cluster.shutdown()
