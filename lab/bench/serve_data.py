"""The data set of ``chatlog bench serve``: one channel's month of chat, one very busy day in it, and one
heavy chatter, written into a scratch keyspace through the sink's write path (:mod:`store.write`, with the
sink's write options; no Spark, no Kafka).

The lines are :func:`lab.bench.sink_data.synthetic_events` (Twitch-shaped PRIVMSGs with ~14 tags, a
5,000-user pool) re-timed over the month: ``month_lines`` spread evenly over every day, ``day_lines`` more
on :data:`BIG_DAY`, and ``user_lines`` of :data:`USER` spread over the month. The readers derive every field
of an event from its stored line, so each event's ``raw`` is rebuilt from its fields (:func:`event_line`)
whenever they change: the line says what the event says.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Final

import msgspec

from lab.bench.sink_data import synthetic_events
from schemas.chat_event import ChatEvent

YEAR: Final = 2024
MONTH: Final = 3
"""March 2024: 31 days, all in the past (the answers are cacheable, as a real past month's are)."""
BIG_DAY: Final = date(YEAR, MONTH, 20)
"""The very busy day (streamed)."""
QUIET_DAY: Final = date(YEAR, MONTH, 10)
"""A day of the month with only the month's share of lines (the channel-day of the latency grid)."""
CHANNEL: Final = "chan0000"
"""The channel :func:`synthetic_events` names with ``channels=1``."""
USER: Final = "benchheavy"
"""The heavy chatter whose month is read."""
_DAY_MS: Final = 86_400_000
_WRITE_CHUNK: Final = 20_000
"""Events written at once, as a sink task writes a chunk (``sink.writer.partition.CHUNK_EVENTS``): each
chunk's lines are blocks of their own."""


def _ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


MONTH_LO: Final = _ms(date(YEAR, MONTH, 1))
MONTH_HI: Final = _ms(date(YEAR, MONTH + 1, 1))
_USER_LO: Final = MONTH_LO + 1_234


def _spread(events: list[ChatEvent], lo: int, hi: int) -> list[ChatEvent]:
    """``events`` re-timed evenly over ``[lo, hi)`` (received 40 ms after being sent)."""
    n = len(events)
    step = (hi - lo) / max(n, 1)
    out = []
    for i, event in enumerate(events):
        sent = lo + int(i * step)
        out.append(_retimed(event, sent))
    return out


def _retimed(event: ChatEvent, sent: int) -> ChatEvent:
    """``event`` sent at ``sent``, its user id the login's own (one id per login, as on Twitch); its line
    says so."""
    user_id = _user_id(event.user_login or "")
    tags = {**event.tags, "tmi-sent-ts": str(sent), "user-id": user_id}
    return relined(
        msgspec.structs.replace(event, sent_at=sent, received_at=sent + 40, user_id=user_id, tags=tags)
    )


def _user_id(login: str) -> str:
    digits = "".join(ch for ch in login if ch.isdigit())
    return str(50_000 + int(digits)) if digits else "777777"


def _as_user(event: ChatEvent, user: str) -> ChatEvent:
    """``event`` sent by ``user`` (its prefix and display name; its line says so)."""
    display = user.capitalize()
    tags = {**event.tags, "display-name": display}
    return relined(msgspec.structs.replace(event, user_login=user, display_name=display, tags=tags))


_TAG_ESCAPES: Final = str.maketrans({"\\": "\\\\", ";": "\\:", " ": "\\s", "\r": "\\r", "\n": "\\n"})
"""A tag value escaped as IRCv3 writes it (what :func:`core.irc_tags.unescape_tag_value` undoes)."""


def event_line(event: ChatEvent) -> str:
    """The raw line whose parse (:func:`core.irc_parse.parse_line`) is ``event``: its tags (in their order,
    escaped), a ``nick!user@host`` prefix of ``user_login`` (else the server's), ``kind``, ``#channel`` and
    ``text`` (a ``/me`` as CTCP ACTION). The readers derive every field from the stored line, so an event
    whose fields change gets this line (as :func:`lab.bench.sink_data.synthetic_events` builds its lines)."""
    login = event.user_login
    prefix = f":{login}!{login}@{login}.tmi.twitch.tv" if login else ":tmi.twitch.tv"
    head = f"{prefix} {event.kind} #{event.channel}"
    if event.tags:
        tags = ";".join(f"{k}={v.translate(_TAG_ESCAPES)}" for k, v in event.tags.items())
        head = f"@{tags} {head}"
    if event.text is None:
        return head
    text = f"\x01ACTION {event.text}\x01" if event.is_action else event.text
    return f"{head} :{text}"


def relined(event: ChatEvent) -> ChatEvent:
    """``event`` with :func:`event_line` as its ``raw``."""
    return msgspec.structs.replace(event, raw=event_line(event))


@dataclass(frozen=True)
class DataSet:
    """How many lines the data set has where the benchmark reads."""

    month_lines: int
    day_lines: int
    user_lines: int

    @property
    def big_day_lines(self) -> int:
        """Lines of :data:`BIG_DAY`: its ``day_lines`` and its share of the month's."""
        return self.day_lines + self.month_share(BIG_DAY)

    @property
    def quiet_day_lines(self) -> int:
        return self.month_share(QUIET_DAY)

    @property
    def total(self) -> int:
        return self.month_lines + self.day_lines + self.user_lines

    def month_share(self, day: date) -> int:
        """Lines of the month's and the heavy chatter's even spreads that fall on ``day``."""
        return _share(self.month_lines, MONTH_LO, MONTH_HI, day) + _share(
            self.user_lines, _USER_LO, MONTH_HI, day
        )

    def events(self) -> Iterator[ChatEvent]:
        """Every event of the data set (distinct message ids: each part has its own seed)."""
        yield from _spread(synthetic_events(self.month_lines, seed=11, channels=1), MONTH_LO, MONTH_HI)
        day_lo = _ms(BIG_DAY)
        yield from _spread(synthetic_events(self.day_lines, seed=12, channels=1), day_lo, day_lo + _DAY_MS)
        heavy = [_as_user(e, USER) for e in synthetic_events(self.user_lines, seed=13, channels=1)]
        yield from _spread(heavy, _USER_LO, MONTH_HI)


def _share(n: int, lo: int, hi: int, day: date) -> int:
    """How many of ``n`` lines spread evenly over ``[lo, hi)`` (:func:`_spread`) fall on ``day``."""
    start, end = _ms(day), _ms(day) + _DAY_MS
    step = (hi - lo) / max(n, 1)
    return sum(1 for i in range(n) if start <= lo + int(i * step) < end)


def write(settings: Any, data: DataSet) -> dict[str, Any]:
    """Create the keyspace ``settings.cassandra_keyspace`` (sink settings) at the current layout and write
    ``data`` through :class:`store.write.TaskWrite` with the sink's write options, :data:`_WRITE_CHUNK`
    events at a time; what it took."""
    from sink.writer.collaborators import write_options
    from store.schema import apply_schema
    from store.write import TaskWrite, close_sessions, worker_session

    apply_schema(settings)
    options = write_options(settings)
    start = time.perf_counter()
    try:
        task = TaskWrite(worker_session(settings, options.retry_s, options.timeout_s), options)
        for n, event in enumerate(data.events(), 1):
            task.add(event)
            if n % _WRITE_CHUNK == 0:
                task.finish()
        written = task.finish()
    finally:
        close_sessions()
    seconds = time.perf_counter() - start
    return {
        "events": written.events,
        "rows": sum(written.rows.values()),
        "rows_by_table": dict(written.rows),
        "requests": written.requests,
        "seconds": round(seconds, 1),
        "events_per_s": round(written.events / seconds) if seconds else None,
    }
