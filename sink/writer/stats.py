"""What writing a partition, a micro-batch or a backfill did: :class:`WriteStats`, added up on the driver."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class WriteStats:
    """What writing one partition, batch or backfill did."""

    events: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    deadletters: int = 0
    requests: int = 0
    retries: int = 0
    optout_dropped: int = 0
    """Valid events not written because their user or channel opted out (:mod:`consent.rule`)."""
    optout_logins: dict[str, str] = field(default_factory=dict)
    """Login -> user id of the dropped events of opted-out users (the driver matches later events that
    name a user by login only against these logins)."""
    duplicates: int = 0
    """Copies the writer dropped (``recent`` given to :func:`write_partition`: ``sink_dedup=writer``)."""
    written_ids: bytes = b""
    """The dedup ids (:mod:`sink.dedup`) of the events written, when the writer deduplicates."""

    @property
    def rows_total(self) -> int:
        return sum(self.rows.values())

    def add(self, other: WriteStats) -> None:
        self.events += other.events
        self.rows.update(other.rows)
        self.deadletters += other.deadletters
        self.requests += other.requests
        self.retries += other.retries
        self.optout_dropped += other.optout_dropped
        self.optout_logins.update(other.optout_logins)
        self.duplicates += other.duplicates
        self.written_ids += other.written_ids

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "rows": dict(self.rows),
            "deadletters": self.deadletters,
            "requests": self.requests,
            "retries": self.retries,
            "optout_dropped": self.optout_dropped,
            "optout_logins": dict(self.optout_logins),
            "duplicates": self.duplicates,
            "written_ids": self.written_ids,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteStats:
        return cls(
            events=data["events"],
            rows=Counter(data["rows"]),
            deadletters=data["deadletters"],
            requests=data["requests"],
            retries=data["retries"],
            optout_dropped=data.get("optout_dropped", 0),
            optout_logins=dict(data.get("optout_logins", {})),
            duplicates=data.get("duplicates", 0),
            written_ids=data.get("written_ids", b""),
        )
