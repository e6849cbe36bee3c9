"""Opt-outs on the sink's driver: the sets each batch is written with, and erasure that follows the registry.

Filter. The driver follows the opt-out registry (:class:`consent.registry.OptOutRegistry`, the whole
compacted ``chatlog.optout`` topic in a thread) and gives every micro-batch, and a backfill, the sets it
holds when the batch starts (:meth:`OptOutFollower.batch`) as an :class:`consent.rule.OptOutSet`
that the partition task carries to the executors. Why the driver and not a registry in each executor's
Python worker: one consistent set per batch (every task of a batch filters alike), one Kafka consumer
per sink instead of one per Python worker process (a cluster has many, and Spark may start new ones at
any time, each of which would have to read the whole topic before its first task), and the driver knows
which set each batch was written with, which is what makes the erasure below final. The cost is the
set's size in every task: 12 bytes a pickled id (10,000 users and 1,000 channels: 132 KB, measured with
pyspark's cloudpickle), so a few thousand opt-outs cost little next to a batch, and pyspark broadcasts a
task past 1 MiB by itself. The check on the executors: ~0.2 µs an event.

The logins of opted-out users (``logins``: a deleted message names its author by login only) come from
the name history (``user_names``), read when the driver first sees the user id (at start, or when the
opt-out arrives, before it is erased: erasure deletes those rows).

Erasure. When an opt-out without ``keep_history`` arrives (from ``chatlog optout add``, the admin API,
or a chat command that no one followed with ``chatlog erase``), the driver erases the user's (or the
channel's) rows with :func:`store.erase.erase`, whose audit row names ``sink:<who opted out>``. It
waits for the batches that started before the opt-out arrived (they may have been written with the old
set); every later batch drops the user, so once the erasure is done no row comes back, not even from a
replay of the retained topic. At start (``catch_up``), the opt-outs the audit shows no erasure for since
they were registered (the sink was down, or an erasure failed) are erased too. Each opt-out read after
the start gets its audit row (:func:`consent.audit.record_optout`, idempotent: keyed by the record's
time), so a self-service opt-out is audited although no ingester talks to Cassandra. The erasures run in
a thread of their own beside the query and are retried while Cassandra fails; each is idempotent, so a
sink stopped halfway erases the rest at its next start. The Cassandra session is opened on first use:
a sink whose Cassandra is down fails on its writes, with their own message.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from consent.records import Code, OptOut
from consent.rule import OptOutSet
from core.errors import ChatlogError, one_line

if TYPE_CHECKING:
    from consent.registry import RegistryView
    from sink.settings import SinkSettings
    from store.erase import ErasureReport

log = logging.getLogger(__name__)

RETRY_S: Final = 5.0
"""Seconds between attempts of an erasure that failed (Cassandra down)."""


Erase = Callable[..., "ErasureReport"]


@dataclass
class _Pending:
    optout: OptOut
    after_batches: int
    """How many batches had started when the opt-out arrived: the erasure waits until they are done."""


class OptOutFollower:
    """The driver's opt-outs (see the module doc).

    ``connect``: opens a cassandra-driver session on the sink's keyspace's cluster (name history,
    erasure, audit), called on first use; None: no logins, no audit, no erasure. ``erase``: erase new
    opt-outs; ``catch_up``: at start, also those the audit shows no erasure for. ``eraser``: instead of
    :func:`store.erase.erase` (tests).
    """

    def __init__(
        self,
        settings: SinkSettings,
        registry: RegistryView,
        *,
        connect: Callable[[], Any] | None = None,
        erase: bool = True,
        catch_up: bool = False,
        eraser: Erase | None = None,
    ) -> None:
        self.settings = settings
        self.keyspace = settings.cassandra_keyspace
        self.registry = registry
        self._connect = connect
        self._session: Any = None
        self.erase = erase and connect is not None
        self._catch_up = catch_up and self.erase
        self._eraser = eraser
        self._cond = threading.Condition()
        self._started = 0
        self._running: set[int] = set()
        self._pending: list[_Pending] = []
        self._audit: list[OptOut] = []
        self._logins: dict[str, frozenset[str]] = {}
        self._digests: dict[str, frozenset[str]] = {}
        """User id -> the digests of its logins an erasure kept (``erased_logins``)."""
        self._learned: dict[str, str] = {}
        """Login -> user id, seen on the events of opted-out users."""
        self._snapshot: tuple[frozenset[str], frozenset[str], OptOutSet] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._following = False
        self.erased: list[ErasureReport] = []
        self._erased_at: dict[str, int] = {}
        """Key -> when its last erasure started: a record of the same opt-out written before needs none."""
        self.failures = 0
        self._failing = False
        """The last attempt to reach Cassandra failed: :meth:`close` does not wait for it."""

    # -- life ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Read the registry to its end (ChatlogError, one line, when Kafka or the topic is missing),
        then start the thread that audits and erases."""
        self.registry.subscribe(self._on_record)
        self.registry.start()
        self.registry.wait_ready(self.settings.optout_ready_timeout_s)
        self._following = True  # records read from now on are new (the catch-up sees the others)
        current = self.current()
        if current:
            log.info("opt-outs: %d user(s), %d channel(s)", len(current.users), len(current.channels))
        if self._connect is not None:
            self._thread = threading.Thread(target=self._run, name="optout-erase", daemon=True)
            self._thread.start()

    def close(self, timeout_s: float = 60.0) -> None:
        """Finish the erasures that may run now (every batch is done), at most ``timeout_s``; stop."""
        thread = self._thread
        if thread is not None:
            deadline = time.monotonic() + timeout_s
            with self._cond:
                while (self._pending or self._audit or self._catch_up) and thread.is_alive():
                    if time.monotonic() >= deadline or self._failing:
                        break
                    self._cond.wait(0.2)
                left = len(self._pending)
            self._stop.set()
            with self._cond:
                self._cond.notify_all()
            thread.join(timeout_s)
            if left:
                log.warning("opt-outs: %d erasure(s) not done at exit: the next sink start does them", left)
        self.registry.close()
        session = self._session
        if session is not None:
            with contextlib.suppress(Exception):
                session.cluster.shutdown()

    @property
    def pending(self) -> int:
        """Erasures waiting (for earlier batches, or for Cassandra)."""
        with self._cond:
            return len(self._pending)

    # -- batches ------------------------------------------------------------------------------------
    def current(self) -> OptOutSet:
        """The registry's sets now, with the logins of the users (cached while the sets stay)."""
        users, channels = self.registry.users(), self.registry.channels()
        snap = self._snapshot
        if snap is not None and snap[0] is users and snap[1] is channels:
            return snap[2]
        self._learn_logins(users)
        logins = frozenset(login for user in users for login in self._logins.get(user, ()))
        learned = frozenset(login for login, user in self._learned.items() if user in users)
        digests = frozenset(digest for user in users for digest in self._digests.get(user, ()))
        optouts = OptOutSet(users=users, channels=channels, logins=logins | learned, login_digests=digests)
        self._snapshot = (users, channels, optouts)
        return optouts

    def learn(self, logins: Mapping[str, str]) -> None:
        """Logins (-> user id) the written batches saw opted-out users send with (``optout_logins`` of
        :class:`sink.writer.stats.WriteStats`, a backfill's pre-pass): later batches drop the
        events that name those users by login only."""
        new = {login: user for login, user in logins.items() if self._learned.get(login) != user}
        if new:
            with self._cond:
                self._learned.update(new)
                self._snapshot = None

    @contextlib.contextmanager
    def batch(self) -> Iterator[OptOutSet]:
        """Around the write of one batch: the sets it is written with. An erasure of an opt-out that
        arrived before this batch started does not wait for it (it drops that user already)."""
        with self._cond:
            index = self._started
            self._started += 1
            self._running.add(index)
            optouts = self.current()
        try:
            yield optouts
        finally:
            with self._cond:
                self._running.discard(index)
                self._cond.notify_all()

    # -- the registry's thread ----------------------------------------------------------------------
    def _on_record(self, key: str, value: OptOut | Code | None) -> None:
        if not isinstance(value, OptOut) or self._connect is None or not self._following:
            return
        if value.kind == "user":
            self._learn_logins(frozenset({value.id}))  # before an erasure deletes the name history
        with self._cond:
            self._audit.append(value)
            if self.erase and not value.keep_history:
                # the same opt-out written twice (both ingesters of a redundant pair saw the chat
                # command) is erased once: the erasure waits for the batches of the later record
                same = next((p for p in self._pending if p.optout.key == value.key), None)
                if same is not None:
                    same.after_batches = self._started
                elif self._erased_at.get(value.key, -1) < value.at:
                    self._pending.append(_Pending(value, self._started))
            self._cond.notify_all()

    # -- the audit and erasure thread ---------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            if self._catch_up and not self._owed():
                self._stop.wait(RETRY_S)
                continue
            with self._cond:
                job = self._next()
                while job is None and not self._audit and not self._stop.is_set():
                    self._cond.wait(1.0)
                    job = self._next()
                audits = self._audit
            if audits and self._record(audits):
                with self._cond:
                    del self._audit[: len(audits)]
                    self._cond.notify_all()
            if job is None:
                if audits and self._audit:
                    self._stop.wait(RETRY_S)
                continue
            if self._erase(job.optout):
                with self._cond:
                    self._pending.remove(job)
                    self._cond.notify_all()
            else:
                self._stop.wait(RETRY_S)

    def _next(self) -> _Pending | None:
        """The first opt-out whose earlier batches are all done (called with the lock held)."""
        oldest = min(self._running, default=self._started)
        return next((p for p in self._pending if p.after_batches <= oldest), None)

    def _owed(self) -> bool:
        """Queue the erasures owed since the sink last ran; whether the audit could be read."""
        try:
            owed = self._not_erased(self.registry.optouts())
        except Exception as exc:  # Cassandra down: the driver raises several kinds
            log.warning(
                "opt-outs: the consent audit cannot be read (%s); retrying", one_line(exc, 300, typed=True)
            )
            self._failed()
            return False
        with self._cond:
            self._failing = False
            known = {p.optout.key for p in self._pending}
            self._pending[:0] = [_Pending(o, 0) for o in owed if o.key not in known]
            self._audit[:0] = owed
            self._catch_up = False
            self._cond.notify_all()
        if owed:
            log.info("opt-outs: %d erasure(s) owed since the sink last ran", len(owed))
        return True

    def _erase(self, optout: OptOut) -> bool:
        if self.lifted(optout):
            log.info("the opt-out of %s %s was lifted before its erasure: not erased", optout.kind, optout.id)
            return True
        eraser = self._eraser or _consent_erase()
        ids = {"user_id": optout.id} if optout.kind == "user" else {"channel_id": optout.id}
        try:
            report = eraser(self.session(), self.keyspace, by=f"sink:{optout.by}", **ids)
        except Exception as exc:  # ChatlogError from erase; a driver error it did not expect
            log.error(
                "erasing %s %s (opted out): %s; retrying in %.0fs", optout.kind, optout.id, exc, RETRY_S
            )
            self._failed()
            return False
        self._failing = False
        self._erased_at[optout.key] = report.at
        self.erased.append(report)
        log.info(
            "erased %s %s (opted out by %s): %d row(s)", optout.kind, optout.id, optout.by, report.total_rows
        )
        return True

    def lifted(self, optout: OptOut) -> bool:
        """Whether the opt-out is gone from the registry (lifted) or now keeps the history."""
        ids = self.registry.users() if optout.kind == "user" else self.registry.channels()
        if optout.id not in ids:
            return True
        now = next((o for o in self.registry.optouts() if o.key == optout.key), None)
        return now is not None and now.keep_history

    def _record(self, optouts: list[OptOut]) -> bool:
        """The audit rows of opt-out records (idempotent); whether they were all written."""
        from consent.audit import record_optout

        try:
            session = self.session()
            for optout in optouts:
                record_optout(session, self.keyspace, optout)
        except Exception as exc:  # Cassandra down: the driver raises several kinds
            log.error("opt-outs: audit rows not written (%s); retrying", one_line(exc, 300, typed=True))
            self._failed()
            return False
        return True

    def _failed(self) -> None:
        with self._cond:
            self.failures += 1
            self._failing = True
            self._cond.notify_all()

    # -- Cassandra ----------------------------------------------------------------------------------
    def session(self) -> Any:
        """The Cassandra session, opened on first use (ChatlogError, one line, when it cannot be)."""
        if self._session is None:
            if self._connect is None:
                raise ChatlogError("the opt-out follower has no Cassandra session")
            self._session = self._connect()
        return self._session

    def _learn_logins(self, users: frozenset[str]) -> None:
        """Read the logins of the users not looked up yet from ``user_names``, and the digests of the
        logins their erasures kept (``erased_logins``: the name history of an erased user is gone)."""
        new = [u for u in users if u not in self._logins]
        if not new or self._connect is None:
            return
        names = self._per_user("SELECT user_login FROM {}.user_names WHERE user_id = ?", new, "logins")
        digests = self._per_user("SELECT digest FROM {}.erased_logins WHERE user_id = ?", new, "digests")
        if names is None:  # Cassandra down: looked up again next time, and their CLEARMSGs matched then
            return
        for user, rows in zip(new, names, strict=True):
            self._logins[user] = frozenset(row[0] for row in rows)
        for user, rows in zip(new, digests or [], strict=True):
            self._digests[user] = frozenset(row[0] for row in rows)

    def _per_user(self, query: str, users: list[str], what: str) -> list[list[Any]] | None:
        """The rows of ``query`` (``{}``: the keyspace) for each of ``users``; None, logged, on failure."""
        from cassandra.concurrent import execute_concurrent_with_args

        try:
            session = self.session()
            statement = session.prepare(query.format(self.keyspace))
            results = execute_concurrent_with_args(
                session, statement, [(u,) for u in users], concurrency=32, raise_on_first_error=True
            )
        except Exception as exc:
            log.warning(
                "opt-outs: the %s of %d user(s) could not be read: %s",
                what,
                len(users),
                one_line(exc, 300, typed=True),
            )
            return None
        return [list(rows) for _ok, rows in results]

    def _not_erased(self, optouts: list[OptOut]) -> list[OptOut]:
        """The opt-outs without ``keep_history`` that no erasure since their ``at`` is audited for."""
        owed = [o for o in optouts if not o.keep_history]
        if not owed:
            return []
        from consent.audit import read

        erased: dict[tuple[str, str], int] = {}
        since = min(o.at for o in owed)
        for entry in read(self.session(), self.keyspace, limit=None, action="erase", since_ms=since):
            if entry.kind == "channel" or entry.channel is None:  # a user's rows in one channel: not all
                erased[(entry.kind, entry.id)] = max(entry.at, erased.get((entry.kind, entry.id), 0))
        return [o for o in owed if erased.get((o.kind, o.id), -1) < o.at]


def _consent_erase() -> Erase:
    from store.erase import erase

    return erase


def follower(settings: SinkSettings, *, erase: bool, catch_up: bool) -> OptOutFollower:
    """The production follower: the opt-out registry of ``settings`` and a Cassandra session of its own
    (opened on first use, shut down by :meth:`OptOutFollower.close`)."""
    from consent.registry import OptOutRegistry
    from core.cql import open_session

    def connect() -> Any:
        return open_session(settings)[1]

    registry = OptOutRegistry(settings, settings.topic_optout)
    return OptOutFollower(settings, registry, connect=connect, erase=erase, catch_up=catch_up)
