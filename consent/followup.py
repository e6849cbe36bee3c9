"""What an opt-out registered in chat needs next: its audit row, and the erasure of its stored rows.

``chatlog optout add`` and the admin API audit and erase themselves. An opt-out that arrives on the topic
from elsewhere (the self-service chat command: ``by`` is ``code:<code>``, written by the ingester that
read the line) is followed up here, by a process that has the registry and a Cassandra session
(``chatlog serve`` runs one): the audit row (idempotent: keyed by the record's own ``at``), then, unless
``keep_history``, :func:`consent.erase.erase`, skipped when the audit already holds an erasure of that
user or channel since the opt-out (another process did it). Erasures run in a worker thread, one at a
time, never in the registry's reader thread. At start, records older than :data:`WINDOW_MS` are not
followed up again (they were when they were new).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from typing import Any, Final

from consent import audit
from consent.erase import erase
from consent.records import OptOut, Value
from consent.registry import OptOutRegistry

log = logging.getLogger(__name__)

WINDOW_MS: Final = 24 * 3_600_000
"""Opt-outs older than this when read are taken as followed up already."""
OPERATOR_PREFIXES: Final = ("cli:", "api:")
"""``by`` of the records whose writers audit and erase themselves."""
QUEUE_MAX: Final = 100_000


def needs_follow_up(optout: OptOut, now_ms: int) -> bool:
    return not optout.by.startswith(OPERATOR_PREFIXES) and optout.at >= now_ms - WINDOW_MS


class OptOutFollowUp:
    """Audits and erases the opt-outs of ``registry`` that no operator tool handled (see the module doc).
    Subscribe it before the registry starts, so records that arrived while no follower ran are seen."""

    def __init__(self, registry: OptOutRegistry, session: Any, keyspace: str) -> None:
        self.registry = registry
        self.session = session
        self.keyspace = keyspace
        self._queue: queue.Queue[OptOut | None] = queue.Queue(QUEUE_MAX)
        self._thread: threading.Thread | None = None
        self.done: list[tuple[str, int]] = []
        """(key, rows erased) of every opt-out followed up (for tests and logs)."""

    def start(self) -> None:
        self.registry.subscribe(self._on_record)
        self._thread = threading.Thread(target=self._run, name="optout-followup", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(30)
        self._thread = None

    def _on_record(self, _key: str, value: Value | None) -> None:
        if isinstance(value, OptOut) and needs_follow_up(value, int(time.time() * 1000)):
            try:
                self._queue.put_nowait(value)
            except queue.Full:
                log.warning("opt-out follow-up queue full: %s not audited or erased here", value.key)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self.follow_up(item)
            except Exception as exc:  # logged; another follower or a re-run of `chatlog erase` finishes it
                log.warning("following up the opt-out %s failed: %s: %s", item.key, type(exc).__name__, exc)

    def follow_up(self, optout: OptOut) -> int:
        """Audit ``optout`` and erase its rows unless kept or already erased; the rows erased."""
        audit.record_optout(self.session, self.keyspace, optout)
        rows = 0
        if not optout.keep_history:
            earlier = audit.read(
                self.session,
                self.keyspace,
                limit=1,
                kind=optout.kind,
                id=optout.id,
                action="erase",
                since_ms=optout.at,
            )
            if not earlier or earlier[0].channel is not None:
                report = erase(
                    self.session,
                    self.keyspace,
                    user_id=optout.id if optout.kind == "user" else None,
                    channel_id=optout.id if optout.kind == "channel" else None,
                    by=optout.by,
                )
                rows = report.total_rows
        self.done.append((optout.key, rows))
        return rows
