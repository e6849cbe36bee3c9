"""Chat events for the read side's integration tests, written by the storage's one write path
(:class:`store.write.TaskWrite`, as a sink's task does): real Twitch lines parsed as the ingester does
(:func:`core.testing.twitch_line`, :func:`core.testing.chat_events`), since every field the readers give back
is derived from the stored line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.cql import connect
from core.settings import CassandraSettings
from core.testing import chat_events, twitch_event
from schemas.chat_event import ChatEvent
from store.write import Caches, TaskWrite, WriteOptions, Written, worker_session_of


def make_events(n: int, *, channels: int = 7, now_ms: int | None = None, ids: bool = True) -> list[ChatEvent]:
    """``n`` events 37 ms apart ending at ``now_ms``, over ``channels`` channels: PRIVMSG, a timeout of
    ``user5`` (CLEARCHAT) every 97, a deleted message (CLEARMSG) every 89
    (:func:`core.testing.chat_events`)."""
    return chat_events(n, channels=channels, now_ms=now_ms, ids=ids)


def line_event(kind: str, channel: str, at: int, **line: Any) -> ChatEvent:
    """The event an ingester makes of a Twitch line sent at ``at`` (:func:`core.testing.twitch_event`;
    ``line``: its keyword arguments, the line's fields and ``received_after_ms``)."""
    return twitch_event(kind, channel, sent_at=at, **line)


def privmsg(channel: str, at: int, login: str | None, text: str, **line: Any) -> ChatEvent:
    """A PRIVMSG of ``login`` (:func:`line_event`), its display name the login capitalized unless ``line``
    gives one."""
    line.setdefault("display_name", (login or "").capitalize())
    return line_event("PRIVMSG", channel, at, login=login, text=text, **line)


def write(
    settings: CassandraSettings,
    events: Sequence[ChatEvent],
    *,
    batch: int | None = None,
    caches: Caches | None = None,
) -> Written:
    """Write ``events`` into the keyspace of ``settings`` through :class:`store.write.TaskWrite`, as one
    task of a new process (``caches``: a new :class:`~store.write.Caches` unless given, so every index and
    name row is written). ``batch``: the task finishes every ``batch`` events, as the sink does at each
    micro-batch, so a period's lines are in several blocks; None: one finish."""
    cluster, session = connect(settings)
    try:
        task = TaskWrite(
            worker_session_of(session),
            WriteOptions(keyspace=settings.cassandra_keyspace, retry_s=30.0),
            Caches() if caches is None else caches,
        )
        for n, event in enumerate(events, 1):
            task.add(event)
            if batch is not None and n % batch == 0:
                task.finish()
        written = task.finish()
    finally:
        cluster.shutdown()
    assert written.events == len(events)
    return written


def alice_and_bob(months: tuple[int, int], *, lines: int, step_ms: int) -> list[ChatEvent]:
    """alice (1001) and bob (2002) chat in channel 500 (``chan``) from each of ``months`` (epoch ms):
    ``lines`` messages each, ``step_ms`` apart (``a0``.., ``b0``..); alice's ``a0`` of the first month is
    deleted 30 s after it (CLEARMSG: her login only, no user id)."""
    out = []
    for month in months:
        for i in range(lines):
            at = month + i * step_ms
            for login, user_id, said, late in (("alice", "1001", "a", 0), ("bob", "2002", "b", 1)):
                out.append(
                    line_event(
                        "PRIVMSG",
                        "chan",
                        at + late,
                        login=login,
                        user_id=user_id,
                        room_id="500",
                        text=f"{said}{i}",
                    )
                )
    out.append(
        line_event(
            "CLEARMSG", "chan", months[0] + 30_000, login="alice", room_id="500", text="a0", message_id="x1"
        )
    )
    return out
