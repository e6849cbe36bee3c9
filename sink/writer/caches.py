"""What a Python worker process wrote lately, so that it is not written again by every task: the index rows
of a channel's buckets (:class:`IndexCache`) and the name history (:class:`NameCache`)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from sink.writer.rows import HOUR_MS


class IndexCache:
    """Index rows (``channel_buckets``) this process wrote lately, so a busy channel's bucket is
    written about once per ``refresh_s`` instead of once per task.

    An entry is added only after the write that carried it succeeded. The index rows get a TTL of
    ``refresh_s`` more than the data rows: every data row is written at most ``refresh_s`` after its
    index row was (re)written, so the index never expires before the rows it points to.
    """

    def __init__(self, refresh_s: float = 300.0, max_entries: int = 500_000) -> None:
        self.refresh_s = refresh_s
        self._max = max_entries
        self._written: dict[Hashable, float] = {}

    def fresh(self, key: Hashable, now: float) -> bool:
        written = self._written.get(key)
        return written is not None and now - written < self.refresh_s

    def add(self, keys: Iterable[Hashable], when: float) -> None:
        if len(self._written) > self._max:
            self._written.clear()
        self._written.update(dict.fromkeys(keys, when))

    def ttl(self, ttl_s: int) -> int:
        return ttl_s + int(self.refresh_s) if ttl_s else 0


INDEX_CACHE = IndexCache()

HourSpan = tuple[int, int]
"""The first and last hour (epoch ms // :data:`HOUR_MS`, event time) a name was written for."""


class NameCache:
    """Names (a user id with its login and display name, a channel id with its login) this process
    wrote, with the span of hours of event time it wrote them for, so that each is written at most once
    per hour instead of once per event.

    An event of hour ``h`` needs no write when the name was written for an hour ``<= h`` and for an hour
    ``>= h``: the earliest and latest writes already lie in ``h`` or beyond it, and ``first_seen`` /
    ``last_seen`` keep the earliest and latest time written, so each stays in the hour of the true first
    (last) event. That is the precision of the name history: an hour. A replay of hours already written
    writes nothing; a stream writes each active name once per hour (the first event of the hour).
    Entries are added only after the writes that carried them succeeded. When the cache holds more than
    ``max_entries`` names it starts over (those names are written once more, nothing is lost).
    """

    def __init__(self, max_entries: int = 300_000) -> None:
        self._max = max_entries
        self._spans: dict[Hashable, HourSpan] = {}

    def get(self, key: Hashable) -> HourSpan | None:
        return self._spans.get(key)

    def add(self, written: dict[Hashable, HourSpan]) -> None:
        if len(self._spans) > self._max:
            self._spans.clear()
        spans = self._spans
        for key, (lo, hi) in written.items():
            old = spans.get(key)
            spans[key] = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))

    @staticmethod
    def ttl(ttl_s: int) -> int:
        """A name row outlives the data rows of the events that wrote it by an hour (0: no expiry)."""
        return ttl_s + HOUR_MS // 1000 if ttl_s else 0


NAME_CACHE = NameCache()


class SpillGuard:
    """How many rows this process wrote into each user's month partition (schemas/cassandra.cql
    ``chat_by_user``), so that a user-month past ``CHATLOG_SINK_USER_MONTH_ROWS`` (a bot) goes on in half-day
    partitions and the month partition stays bounded.

    Keys are the serialized partition keys of the month partition. Counts grow as rows are queued (a
    failed write counted too: the cap then comes a little early, nothing is lost). ``spilled`` remembers
    the month partitions whose static flag this process has written. When the guard holds more than
    ``max_entries`` user-months it starts over (a user-month may then get up to the cap more rows: the
    bound of schemas/cassandra.cql counts such restarts among its writers).
    """

    def __init__(self, max_entries: int = 1_000_000) -> None:
        self._max = max_entries
        self.counts: dict[Hashable, int] = {}
        self.spilled: set[Hashable] = set()

    def count(self, key: Hashable) -> int:
        """The rows counted for ``key`` before this one, and this one counted."""
        counts = self.counts
        seen = counts.get(key, 0)
        if seen == 0 and len(counts) >= self._max:
            counts.clear()
            self.spilled.clear()
        counts[key] = seen + 1
        return seen


SPILL_GUARD = SpillGuard()
