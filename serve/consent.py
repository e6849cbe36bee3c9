"""Consent on the read side: a :class:`~store.protocol.LogStore` that hides whoever opted out.

:class:`ConsentStore` wraps the app's store and asks the opt-out registry (:mod:`consent.registry`, read
whole from the compacted topic and followed while the app runs):

* a route that names an opted-out channel or user (by id, or by a login whose newest id opted out) gets
  :class:`OptedOut`, answered as a 403 ``{"error": "user or channel has opted out", ...}``;
* ``channels()`` leaves opted-out channels out (so ``/channels`` does not list them);
* the events of a channel skip those of opted-out users: what they sent, and the bans, timeouts and deleted
  messages that name them by id (their rows are erased on opt-out, unless kept with ``keep_history``, and
  a row written before the opt-out reached the sink may still be there).

It implements :class:`~store.protocol.LogStore` itself, method by method; the Cassandra ``session``
and the name lookups are the wrapped store's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import date
from typing import Any, Final, Protocol

from fastapi import Request
from fastapi.responses import JSONResponse

from consent.rule import BY_LOGIN, OUT, SeenLogins, keyed_verdict, named_login, verdict
from schemas.chat_event import ChatEvent
from serve.errors import ApiError, error_response
from store.line import LogLine, Run, Span, aclose
from store.names import NameSeen
from store.protocol import ById, Channel, LogStore, Named

OPTED_OUT: Final = "user or channel has opted out"


class OptedOut(ApiError):
    """The channel or user a request names opted out: a 403 (an :class:`ApiError`, so a stream that is
    peeked before its answer starts passes it on)."""

    def __init__(self) -> None:
        super().__init__(403, OPTED_OUT, code="opted_out")


async def on_opted_out(request: Request, exc: Exception) -> JSONResponse:
    """``{"status": 403, "message": ..., "error": "user or channel has opted out", ...}``."""
    return error_response(403, OPTED_OUT, "opted_out")


class OptOuts(Protocol):
    """What the store asks of the registry (:class:`consent.registry.OptOutRegistry` has it)."""

    def user_out(self, user_id: str | None) -> bool: ...
    def channel_out(self, channel_id: str | None) -> bool: ...
    def users(self) -> frozenset[str]: ...
    def channels(self) -> frozenset[str]: ...


def hidden(event: ChatEvent, optouts: OptOuts, seen: SeenLogins) -> bool:
    """The live stream's check (:mod:`consent.rule`): a login-only event (a deleted message) is resolved by
    the logins ``seen`` learned from the opted-out users' own lines the stream read."""
    users = optouts.users()
    found = verdict(event, users, optouts.channels())
    if found is OUT:
        seen.learn(event, users)
        return True
    return found is BY_LOGIN and named_login(event) in seen


class ConsentStore:
    """``inner`` with the opt-outs of ``optouts`` enforced (see the module doc)."""

    def __init__(self, inner: LogStore, optouts: OptOuts) -> None:
        self.inner = inner
        self.optouts = optouts

    @property
    def session(self) -> Any | None:
        return self.inner.session

    # --- who is named ---------------------------------------------------------------------------------

    async def _id_of(self, who: Named, *, channel: bool) -> str | None:
        if isinstance(who, ById):
            return who.id.strip()
        return await (self.inner.channel_id(who) if channel else self.inner.user_id(who))

    async def channel_id(self, channel: Named) -> str | None:
        return await self.inner.channel_id(channel)

    async def user_id(self, user: Named) -> str | None:
        return await self.inner.user_id(user)

    async def check_channel(self, channel: Named) -> None:
        """OptedOut when ``channel`` (by id, or its login's id) opted out."""
        if self.optouts.channel_out(await self._id_of(channel, channel=True)):
            raise OptedOut()

    async def check_user(self, user: Named) -> None:
        """OptedOut when ``user`` (by id, or its login's newest id) opted out."""
        if self.optouts.user_out(await self._id_of(user, channel=False)):
            raise OptedOut()

    async def _check(self, channel: Named, user: Named | None = None) -> None:
        await self.check_channel(channel)
        if user is not None:
            await self.check_user(user)

    async def hides(self, event: ChatEvent) -> bool:
        """The one rule (:mod:`consent.rule`); an event that names its user by login only (a deleted message,
        a ban read from its text) is resolved by the login's newest id (the wrapped store caches the
        lookups)."""
        optouts = self.optouts
        found = verdict(event, optouts.users(), optouts.channels())
        if found is BY_LOGIN:
            login = named_login(event)
            return login is not None and optouts.user_out(await self._id_of(login, channel=False))
        return found is OUT

    # --- LogStore ---------------------------------------------------------------------------------------

    async def channels(self) -> list[Channel]:
        return [c for c in await self.inner.channels() if not self.optouts.channel_out(c.channel_id)]

    async def channel_by_id(self, channel_id: str) -> str | None:
        if self.optouts.channel_out(channel_id.strip()):
            raise OptedOut()
        return await self.inner.channel_by_id(channel_id)

    async def user_by_id(self, channel: Named, user_id: str) -> str | None:
        if self.optouts.user_out(user_id.strip()):
            raise OptedOut()
        return await self.inner.user_by_id(channel, user_id)

    async def channel_days(self, channel: Named) -> list[date]:
        await self._check(channel)
        return await self.inner.channel_days(channel)

    async def latest_day(self, channel: Named) -> date | None:
        await self._check(channel)
        return await self.inner.latest_day(channel)

    async def user_months(self, channel: Named, user: Named) -> list[tuple[int, int]]:
        await self._check(channel, user)
        return await self.inner.user_months(channel, user)

    async def latest_user_month(self, channel: Named, user: Named) -> tuple[int, int] | None:
        await self._check(channel, user)
        return await self.inner.latest_user_month(channel, user)

    async def _hides_line(self, line: LogLine) -> bool:
        """:meth:`hides` of the line's event; by the ids of the partition it was read from where it has them
        (:attr:`~store.line.LogLine.owner`), so a user's month is not parsed line by line."""
        owner = line.owner
        if owner is None:
            return await self.hides(line.event)
        optouts = self.optouts
        return keyed_verdict(owner[0], owner[1], optouts.users(), optouts.channels()) is OUT

    async def _kept(self, run: Run) -> Run:
        """The lines of ``run`` that :meth:`hides` does not: by the ids of the partition each was read from
        where it has them (a block's :meth:`~store.line.Span.owners`), so a user's month is not parsed line
        by line."""
        if isinstance(run, Span) and (owners := run.owners()) is not None:
            users, channels = self.optouts.users(), self.optouts.channels()
            return run.kept([keyed_verdict(user, chan, users, channels) is not OUT for user, chan in owners])
        return [line for line in run if not await self._hides_line(line)]

    async def _shown(
        self, check: Callable[[], Awaitable[None]], runs: AsyncIterator[Run]
    ) -> AsyncIterator[Run]:
        """``check()``, then the lines that :meth:`hides` does not, run by run; none is looked at while
        nobody has opted out."""
        try:
            await check()
            optouts = self.optouts
            async for run in runs:
                if optouts.users() or optouts.channels():
                    kept = await self._kept(run)
                    if not kept:
                        continue
                    yield kept
                else:
                    yield run
        finally:
            await aclose(runs)

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        return self._shown(
            lambda: self._check(channel), self.inner.channel_runs(channel, lo, hi, reverse=reverse)
        )

    def user_runs(
        self, channel: Named, user: Named, lo: int, hi: int, *, reverse: bool = False
    ) -> AsyncIterator[Run]:
        return self._shown(
            lambda: self._check(channel, user), self.inner.user_runs(channel, user, lo, hi, reverse=reverse)
        )

    async def random_channel_event(self, channel: Named) -> ChatEvent | None:
        await self._check(channel)
        event = await self.inner.random_channel_event(channel)
        return None if event is None or await self.hides(event) else event

    async def random_user_event(self, channel: Named, user: Named) -> ChatEvent | None:
        await self._check(channel, user)
        event = await self.inner.random_user_event(channel, user)
        return None if event is None or await self.hides(event) else event

    async def user_count(self, channel: Named, user: Named, lo: int, hi: int) -> tuple[int, str | None]:
        await self._check(channel, user)
        count, user_id = await self.inner.user_count(channel, user, lo, hi)
        if self.optouts.user_out(user_id):
            raise OptedOut()
        return count, user_id

    async def senders(self, channel: Named, lo: int, hi: int) -> AsyncIterator[tuple[str | None, str | None]]:
        await self._check(channel)
        async for login, user_id in self.inner.senders(channel, lo, hi):
            if user_id is None and login:  # a deleted message names its user by login only
                if self.optouts.user_out(await self._id_of(login, channel=False)):
                    continue
            elif self.optouts.user_out(user_id):
                continue
            yield login, user_id

    async def ping(self) -> None:
        await self.inner.ping()

    async def user_name_history(self, user_id: str) -> list[NameSeen]:
        """The wrapped store's; :class:`OptedOut` (a 403) for an opted-out id."""
        if self.optouts.user_out(user_id.strip()):
            raise OptedOut()
        return await self.inner.user_name_history(user_id)


# --- the app's side: the registry started with the app -----------------------------------------------


async def start_consent(app: Any, settings: Any, consent: Any = None) -> None:
    """In the app's lifespan, before it answers: read the opt-out registry to its end (a one-line
    ChatlogError, and no start, when it cannot be read within ``CHATLOG_OPTOUT_READY_TIMEOUT_S``), wrap
    ``app.state.store`` in a :class:`ConsentStore`, and keep the registry and a publisher for the consent
    routes (:mod:`serve.api.optout`). ``consent``: ConsentSettings, default from the environment;
    ``serve_consent`` false: nothing is enforced."""
    import asyncio

    from consent.publish import OptOutPublisher
    from consent.registry import OptOutRegistry
    from consent.settings import ConsentSettings
    from core.settings import load

    config: ConsentSettings = consent if consent is not None else load(ConsentSettings)
    app.state.consent_settings = config
    app.state.consent_keyspace = settings.cassandra_keyspace
    if not config.serve_consent:
        return
    registry = OptOutRegistry(config, config.topic_optout)
    registry.start()
    try:
        await asyncio.to_thread(registry.wait_ready, config.optout_ready_timeout_s)
        app.state.optout_publisher = OptOutPublisher(config)
    except BaseException:
        await asyncio.to_thread(registry.close)
        await stop_consent(app)
        raise
    app.state.optout_registry = registry
    app.state.store = ConsentStore(app.state.store, registry)


async def stop_consent(app: Any) -> None:
    import asyncio

    registry = getattr(app.state, "optout_registry", None)
    if registry is not None:
        await asyncio.to_thread(registry.close)
        app.state.optout_registry = None
    store = getattr(app.state, "store", None)
    if isinstance(store, ConsentStore):
        app.state.store = store.inner


def preflight(config: Any) -> None:
    """For ``chatlog serve`` before the server starts: one line (ChatlogError) when the opt-out registry
    cannot be read (Kafka not reachable, the topic missing), rather than uvicorn's startup traceback.
    Nothing to check when ``serve_consent`` is off."""
    from core.errors import ChatlogError
    from core.kafka_probe import probe

    if not config.serve_consent:
        return
    if config.topic_optout not in probe(config).topics:
        raise ChatlogError(
            f"the opt-out topic {config.topic_optout} does not exist in Kafka at "
            f"{config.kafka_bootstrap_servers} (CHATLOG_TOPIC_OPTOUT; `chatlog init` creates it; "
            "CHATLOG_SERVE_CONSENT=false serves without enforcing opt-outs)"
        )
