"""chatlog serve's side of consent without a server: the store wrapper over a test double, and the admin
key check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pytest
from pydantic import SecretStr

from consent.settings import ConsentSettings
from core.testing import twitch_event
from serve.api.optout import key_name
from serve.consent import ConsentStore, OptedOut
from serve.errors import ApiError
from serve.testing import MemoryStore
from store.line import LogLine, Run, Span, each_line
from store.protocol import ById, Named
from tests.unit.store.stored_lines import framed_lines

AT = 1_790_000_000_000
SECRET = "0123456789abcdef-secret"


@dataclass
class OptOuts:
    user_ids: set[str] = field(default_factory=set)
    channel_ids: set[str] = field(default_factory=set)

    def user_out(self, user_id: str | None) -> bool:
        return user_id in self.user_ids

    def channel_out(self, channel_id: str | None) -> bool:
        return channel_id in self.channel_ids

    def users(self) -> frozenset[str]:
        return frozenset(self.user_ids)

    def channels(self) -> frozenset[str]:
        return frozenset(self.channel_ids)


EVENTS = [
    twitch_event("PRIVMSG", "chan0", sent_at=AT, login="alice", user_id="1", room_id="500", text="hi"),
    twitch_event("PRIVMSG", "chan0", sent_at=AT + 1, login="bob", user_id="2", room_id="500", text="yo"),
    twitch_event("CLEARCHAT", "chan0", sent_at=AT + 2, text="alice", user_id="1", room_id="500"),
    twitch_event("CLEARMSG", "chan0", sent_at=AT + 3, login="alice", room_id="500", message_id="m"),
    twitch_event("CLEARMSG", "chan0", sent_at=AT + 4, login="bob", room_id="500", message_id="n"),
]


ELSEWHERE = twitch_event("PRIVMSG", "chan1", sent_at=AT, login="bob", user_id="2", room_id="501", text="hi")


def Store() -> MemoryStore:  # noqa: N802 - reads as the store it makes
    """chan0 (id 500) with EVENTS, chan1 (id 501) with one line; logins alice=1, bob=2."""
    return MemoryStore([*EVENTS, ELSEWHERE], session="the session")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def collect(it: AsyncIterator[Any]) -> list[Any]:
    """The items of ``it``; a stored line's as its event."""
    return [x.event if isinstance(x, LogLine) else x async for x in it]


def test_nothing_changes_without_opt_outs() -> None:
    store = ConsentStore(Store(), OptOuts())
    assert len(run(store.channels())) == 2
    assert run(collect(each_line(store.channel_runs("chan0", 0, AT * 2)))) == EVENTS
    assert store.session == "the session"  # the rest is the wrapped store's


def test_an_opted_out_channel_is_hidden_and_forbidden() -> None:
    store = ConsentStore(Store(), OptOuts(channel_ids={"500"}))
    assert [c.login for c in run(store.channels())] == ["chan1"]
    for call in (
        store.channel_by_id("500"),
        store.latest_day("chan0"),
        store.latest_day(ById("500", "chan0")),
        store.user_months("chan0", "bob"),
        collect(each_line(store.channel_runs("chan0", 0, 1))),
        collect(store.senders("chan0", 0, 1)),
    ):
        with pytest.raises(OptedOut):
            run(call)
    assert run(store.latest_day("chan1")) == date(2026, 9, 21)


def test_an_opted_out_user_is_forbidden_and_left_out_of_channel_logs() -> None:
    store = ConsentStore(Store(), OptOuts(user_ids={"1"}))
    for call in (
        store.user_by_id("chan0", "1"),
        store.user_months("chan0", "alice"),
        store.user_months("chan0", ById("1", "alice")),
        store.user_count("chan0", "alice", 0, 1),
        collect(each_line(store.user_runs("chan0", "alice", 0, 1))),
    ):
        with pytest.raises(OptedOut):
            run(call)
    left = run(collect(each_line(store.channel_runs("chan0", 0, AT * 2))))
    # alice's message, her timeout, and the deletion of her message (named by login only) are left out
    assert left == [EVENTS[1], EVENTS[4]]
    assert run(collect(store.senders("chan0", 0, AT * 2))) == [("bob", "2"), (None, None), ("bob", None)]
    assert run(store.random_channel_event("chan0")) is None
    with pytest.raises(OptedOut):
        run(store.user_name_history("1"))
    assert run(store.user_months("chan0", "bob")) == [(2026, 9)]


def test_opted_out_is_a_403_api_error() -> None:
    exc = OptedOut()
    assert isinstance(exc, ApiError) and exc.status == 403 and exc.message == "user or channel has opted out"


def settings(keys: str | None) -> ConsentSettings:
    return ConsentSettings(serve_admin_keys=SecretStr(keys) if keys is not None else None)


def test_admin_keys_by_bearer_or_header() -> None:
    s = settings(f"ops:{SECRET},bot:{SECRET}-bot")
    assert key_name(s, f"Bearer {SECRET}", None) == "ops"
    assert key_name(s, f"bearer   {SECRET}-bot", None) == "bot"
    assert key_name(s, None, f"{SECRET}-bot") == "bot"


@pytest.mark.parametrize(
    ("auth", "key", "status"),
    [(None, None, 401), ("Bearer nope", None, 401), (f"Basic {SECRET}", None, 401), (None, SECRET[:-1], 401)],
)
def test_no_or_a_wrong_key_is_401(auth: str | None, key: str | None, status: int) -> None:
    with pytest.raises(ApiError) as caught:
        key_name(settings(f"ops:{SECRET}"), auth, key)
    assert caught.value.status == status and SECRET not in caught.value.message


def test_without_keys_the_admin_routes_are_404() -> None:
    with pytest.raises(ApiError) as caught:
        key_name(settings(None), f"Bearer {SECRET}", None)
    assert caught.value.status == 404


class _Owners:
    """The owners of a block of EVENTS: the channel id and the filed-under user id of each line (the
    deletion of alice's message by login only: filed under no id)."""

    def of(self, index: int) -> tuple[str, str] | None:
        return {0: ("500", "1"), 1: ("500", "2"), 2: ("500", "1"), 4: ("500", "2")}.get(index)


class _FramedStore(MemoryStore):
    """chan0's EVENTS as one block's span, as the Cassandra reader hands them on."""

    def __init__(self, owners: _Owners) -> None:
        super().__init__(EVENTS)
        self.owners = owners

    def channel_runs(self, channel: Named, lo: int, hi: int, *, reverse: bool = False) -> AsyncIterator[Run]:
        async def runs() -> AsyncIterator[Run]:
            block = framed_lines(EVENTS, per_frame=len(EVENTS))[0][1]._frame
            assert block is not None
            yield Span(block, range(len(EVENTS)), self.owners, "chan0")
            yield Span(block, [0, 1], self.owners, "chan0")  # every line with its owner

        return runs()


def test_a_blocks_span_is_filtered_by_its_owners_and_stays_a_span_where_every_line_has_one() -> None:
    """An opted-out user's lines are left out of a block's span by the ids it was filed under (no parse,
    still a span: a text answer reads its columns); a span with a line filed under no id is checked
    line by line (the deletion of alice's message names her by login only)."""
    store = ConsentStore(_FramedStore(_Owners()), OptOuts(user_ids={"1"}))

    async def runs() -> list[Run]:
        return [run async for run in store.channel_runs("chan0", 0, AT * 2)]

    def ids(lines: Any) -> list[str]:
        return [line.event.message_id for line in lines]

    mixed, owned = run(runs())
    assert ids(mixed) == ids(LogLine.of(e) for e in (EVENTS[1], EVENTS[4]))
    assert isinstance(owned, Span) and ids(owned) == [EVENTS[1].message_id]
    nobody = ConsentStore(_FramedStore(_Owners()), OptOuts())
    everything = run(collect(each_line(nobody.channel_runs("chan0", 0, AT * 2))))
    assert [e.message_id for e in everything] == [e.message_id for e in [*EVENTS, *EVENTS[:2]]]
