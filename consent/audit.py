"""The consent audit: one ``consent_audit`` row per opt-out, lift, erasure and self-service code.

Rows hold ids, who acted and counts, never the text of a message (``store/cassandra.cql``). The key
is (month, at, action, kind, id): recording the same action twice (an opt-out record seen by several
processes, keyed by the record's own ``at``) writes the same row.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from consent.records import Code, OptOut
from core import times
from core.times import epoch_ms, now_ms

Action = Literal["optout", "lift", "erase", "code"]
ACTIONS: Final[tuple[Action, ...]] = ("optout", "lift", "erase", "code")
FIRST_MONTH: Final = 202001
"""Reading stops at this month (nothing older can exist: consent came in 2026)."""


@dataclass(frozen=True)
class AuditEntry:
    at: int
    """Epoch ms."""
    action: str
    kind: str
    id: str
    by: str
    channel: str | None = None
    reason: str | None = None
    deleted: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "action": self.action,
            "kind": self.kind,
            "id": self.id,
            "channel": self.channel,
            "by": self.by,
            "reason": self.reason,
            "deleted": dict(self.deleted),
        }


def month_of(at_ms: int) -> int:
    t = time.gmtime(at_ms // 1000)
    return t.tm_year * 100 + t.tm_mon


def _previous(month: int) -> int:
    year, m = divmod(month, 100)
    return (year - 1) * 100 + 12 if m == 1 else month - 1


def _insert(keyspace: str) -> str:
    return (
        f"INSERT INTO {keyspace}.consent_audit "
        "(month, at, action, kind, id, channel, actor, reason, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )


def record(
    session: Any,
    keyspace: str,
    *,
    action: Action,
    kind: str,
    id: str,
    by: str,
    at: int | None = None,
    channel: str | None = None,
    reason: str | None = None,
    deleted: Mapping[str, int] | None = None,
) -> AuditEntry:
    """Write one audit row (``at``: epoch ms, default now) and return it. Driver errors propagate."""
    entry = AuditEntry(
        at=now_ms() if at is None else at,
        action=action,
        kind=kind,
        id=id,
        by=by,
        channel=channel,
        reason=reason,
        deleted=dict(deleted or {}),
    )
    statement = session.prepare(_insert(keyspace))
    session.execute(
        statement,
        (
            month_of(entry.at),
            entry.at,
            entry.action,
            entry.kind,
            entry.id,
            entry.channel,
            entry.by,
            entry.reason,
            entry.deleted or None,
        ),
    )
    return entry


def record_optout(session: Any, keyspace: str, optout: OptOut) -> AuditEntry:
    """The audit row of an opt-out record, keyed by the record's own ``at`` (idempotent)."""
    return record(
        session,
        keyspace,
        action="optout",
        kind=optout.kind,
        id=optout.id,
        by=optout.by,
        at=optout.at,
        reason=optout.reason,
        deleted={"keep_history": 1} if optout.keep_history else None,
    )


def record_code(session: Any, keyspace: str, code: Code, *, at: int | None = None) -> AuditEntry:
    """The audit row of an issued self-service code (its id is the code; nothing about who asked)."""
    return record(session, keyspace, action="code", kind="code", id=code.code, by=code.by, at=at)


def read(
    session: Any,
    keyspace: str,
    *,
    limit: int | None = 1000,
    kind: str | None = None,
    id: str | None = None,
    now_ms: int | None = None,
    since_ms: int | None = None,
    action: str | None = None,
) -> list[AuditEntry]:
    """The newest ``limit`` audit rows (of ``kind``/``id``/``action`` when given, at or after ``since_ms``),
    newest first, month by month; ``limit`` None: every such row."""
    statement = session.prepare(
        f"SELECT at, action, kind, id, channel, actor, reason, deleted FROM {keyspace}.consent_audit "
        "WHERE month = ?"
    )
    month = month_of(times.now_ms() if now_ms is None else now_ms)
    first = FIRST_MONTH if since_ms is None else max(FIRST_MONTH, month_of(since_ms))
    out: list[AuditEntry] = []
    while month >= first and (limit is None or len(out) < limit):
        for row in session.execute(statement, (month,)):
            if (kind is not None and row.kind != kind) or (id is not None and row.id != id):
                continue
            if action is not None and row.action != action:
                continue
            if since_ms is not None and epoch_ms(row.at) < since_ms:
                break  # newest first: the rest of the month is older
            out.append(
                AuditEntry(
                    at=epoch_ms(row.at),
                    action=row.action,
                    kind=row.kind,
                    id=row.id,
                    by=row.actor,
                    channel=row.channel,
                    reason=row.reason,
                    deleted={str(k): int(v) for k, v in (row.deleted or {}).items()},
                )
            )
            if limit is not None and len(out) >= limit:
                break
        month = _previous(month)
    return out
