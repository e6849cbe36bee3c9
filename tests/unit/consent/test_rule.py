"""The one opt-out rule (consent/rule.py), table-driven: every event kind x every opt-out kind, and every
process that enforces it -- the ingester's gate, the sink's filter, the read store, the live stream --
must agree with the table; a stored line is filed under the user the rule says it concerns, which is what
the read store decides by without parsing the line and what erasure takes out of a channel's blocks."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from consent.records import OptOut, login_digest
from consent.registry import OptOutRegistry
from consent.rule import BY_LOGIN, IN, OUT, OptOutSet, SeenLogins, keyed_verdict, verdict, whose
from core.irc_parse import parse_line
from core.settings import KafkaSettings
from core.testing import twitch_line
from ingest.consent import OptOutGate
from schemas.chat_event import ChatEvent
from serve.consent import ConsentStore, hidden
from serve.testing import MemoryStore
from store import frame
from store.blocks import framed
from store.keys import channel_key, filed_under, user_key
from store.line import LogLine
from store.read import BlockOwner, _owner

T0 = 1_700_000_000_000
# bob (user id 42) is the user who may opt out; carol (43) never does. Room 500 stays; room 600 may opt out.


def _event(kind: str, *, n: int, room: str = "500", **fields: Any) -> ChatEvent:
    line = twitch_line(
        kind, "chan", sent_at=T0 + n, room_id=room, message_id=f"00000000-0000-0000-0000-{n:012d}", **fields
    )
    event = parse_line(line, received_at=T0 + n, ingester="w")
    assert event is not None
    return event


def _plain(nick: str, *, n: int) -> ChatEvent:
    """A line without Twitch ids (a plain IRC server, an imported log): its user is known by login only."""
    event = parse_line(f":{nick}!{nick}@host PRIVMSG #chan :hello {n}", received_at=T0 + n)
    assert event is not None
    return event


@dataclass(frozen=True)
class Case:
    name: str
    event: ChatEvent
    user: bool
    """Whether the event concerns bob (opting bob out takes it out)."""
    channel: bool
    """Whether the event is in room 600 (opting that channel out takes it out)."""


CASES = [
    Case("bob's message", _event("PRIVMSG", n=1, login="bob", user_id="42", text="hi"), True, False),
    Case("carol's message", _event("PRIVMSG", n=2, login="carol", user_id="43", text="hi"), False, False),
    Case("carol in room 600", _event("PRIVMSG", n=3, room="600", login="carol", user_id="43"), False, True),
    Case("bob in room 600", _event("PRIVMSG", n=4, room="600", login="bob", user_id="42"), True, True),
    Case(
        "bob's sub", _event("USERNOTICE", n=5, text="x", extra={"login": "bob", "user-id": "42"}), True, False
    ),
    Case("bob banned by id", _event("CLEARCHAT", n=6, user_id="42", text="bob"), True, False),
    Case("carol banned by id", _event("CLEARCHAT", n=7, user_id="43", text="carol"), False, False),
    Case("bob banned by login only", _event("CLEARCHAT", n=8, text="bob"), True, False),
    Case("chat cleared", _event("CLEARCHAT", n=9), False, False),
    Case("chat cleared in 600", _event("CLEARCHAT", n=10, room="600"), False, True),
    Case("bob's message deleted", _event("CLEARMSG", n=11, login="bob", text="hi"), True, False),
    Case("carol's message deleted", _event("CLEARMSG", n=12, login="carol", text="hi"), False, False),
    Case("a notice", _event("NOTICE", n=13, text="slow mode"), False, False),
    Case("bob's login under another id", _event("PRIVMSG", n=14, login="bob", user_id="44"), False, False),
    Case("bob without Twitch ids", _plain("bob", n=15), True, False),
    Case("carol without Twitch ids", _plain("carol", n=16), False, False),
]
OPT_OUTS = ["nobody", "user", "channel"]
IDS = [c.name for c in CASES]


def _expected(case: Case, optout: str) -> bool:
    return (optout == "user" and case.user) or (optout == "channel" and case.channel)


def _registry(optout: str) -> OptOutRegistry:
    """The real registry's fold, fed by hand (no Kafka)."""
    registry = OptOutRegistry(KafkaSettings(), "t.optout")
    if optout != "nobody":
        record = (
            OptOut(kind="user", id="42", by="test", at=T0)
            if optout == "user"
            else OptOut(kind="channel", id="600", by="test", at=T0)
        )
        registry.apply(record.key, record)
    return registry


BOBS_OWN_LINE = _event("PRIVMSG", n=0, login="bob", user_id="42", text="before")
"""What a following process saw first: bob's own line (the ingester and the live stream learn his login)."""


@pytest.mark.parametrize("optout", OPT_OUTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_ingesters_gate(case: Case, optout: str) -> None:
    gate = OptOutGate(_registry(optout))
    gate.refresh()
    gate.drop(BOBS_OWN_LINE)
    assert gate.drop(case.event) is _expected(case, optout)


@pytest.mark.parametrize("optout", OPT_OUTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_sinks_filter(case: Case, optout: str) -> None:
    registry = _registry(optout)
    logins = frozenset({"bob"}) if registry.users() else frozenset()  # the driver reads the name history
    optouts = OptOutSet(users=registry.users(), channels=registry.channels(), logins=logins)
    assert optouts.drops(case.event) is _expected(case, optout)
    erased = OptOutSet(users=registry.users(), channels=registry.channels(), login_digests=frozenset(
        {login_digest("bob")} if registry.users() else ()
    ))  # fmt: skip
    assert erased.drops(case.event) is _expected(case, optout)  # the names erased, their digests kept


@pytest.mark.parametrize("optout", OPT_OUTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_live_stream(case: Case, optout: str) -> None:
    registry, seen = _registry(optout), SeenLogins()
    hidden(BOBS_OWN_LINE, registry, seen)
    assert hidden(case.event, registry, seen) is _expected(case, optout)


@pytest.mark.parametrize("optout", OPT_OUTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_read_store(case: Case, optout: str) -> None:
    logins = MemoryStore([BOBS_OWN_LINE, CASES[1].event])  # a login's newest user id: bob 42, carol 43
    store = ConsentStore(logins, _registry(optout))
    assert asyncio.run(store.hides(case.event)) is _expected(case, optout)


def _stored(event: ChatEvent) -> frame.Frame:
    """A frame of ``event``'s line as the writer frames it (store.blocks.framed)."""
    return frame.decode(frame.encode([framed(event).line]))


def _id_keys(event: ChatEvent) -> tuple[str, str] | None:
    """The (channel id, user id) a reader of a block of ``event``'s channel key decides it by
    (:class:`store.read.BlockOwner`: the block's channel key and the line's filed-under user, from the
    frame); None where either key is a login's."""
    owner = _owner(channel_key(event.channel_id, event.channel), _stored(event))
    assert isinstance(owner, BlockOwner)
    found: tuple[str, str] | None = owner.of(0)
    return found


KEYED = [c for c in CASES if _id_keys(c.event) is not None]


@pytest.mark.parametrize("optout", OPT_OUTS)
@pytest.mark.parametrize("case", KEYED, ids=[c.name for c in KEYED])
def test_the_read_store_by_the_keys_a_row_was_read_under(case: Case, optout: str) -> None:
    """A stored line whose channel key and filed-under user are both ids is decided by them, unread."""
    event = case.event
    owner = _id_keys(event)
    assert owner is not None
    registry = _registry(optout)
    found = keyed_verdict(*owner, registry.users(), registry.channels())
    assert (found is OUT) is _expected(case, optout)
    assert found is verdict(event, registry.users(), registry.channels())
    owners = BlockOwner(owner[0], [owner[1]])  # a block of this one line, read under these keys
    line = LogLine("not an IRC line", event.message_id, event.sent_at, None, "chan", owners=owners)
    assert line.owner == owner
    hides = asyncio.run(ConsentStore(MemoryStore([]), registry)._hides_line(line))
    assert hides is _expected(case, optout) and line._event is None  # decided without parsing the line


def test_most_cases_are_kept_under_id_keys() -> None:
    assert len(KEYED) == 8  # the rest: no user row (a cleared chat, a notice), or under a login key


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_stored_line_is_filed_under_the_user_the_rule_says_it_concerns(case: Case) -> None:
    """Erasure takes out of a channel's blocks the lines whose filed-under user (the frame's ``whos``) is
    one of the user's keys, and the sink writes a user's copy under that key: both are the rule's user."""
    event = case.event
    (key,) = _stored(event).whos or [None]
    assert key == filed_under(event) == user_key(*whose(event))
    bob = {user_key("42", None), user_key(None, "bob")}  # his id, and his login where a line has no id
    assert (key in bob) is case.user


def test_verdicts_without_a_resolver() -> None:
    users, channels = frozenset({"42"}), frozenset({"600"})
    assert verdict(CASES[0].event, users, channels) is OUT
    assert verdict(CASES[1].event, users, channels) is IN
    assert verdict(CASES[10].event, users, channels) is BY_LOGIN  # a deleted message names a login only
    assert verdict(CASES[10].event, frozenset(), channels) is IN  # nobody opted out: nothing to resolve
    assert whose(CASES[8].event) == (None, None)  # a cleared chat concerns no user
    assert whose(CASES[7].event) == (None, "bob")
    assert whose(CASES[5].event) == ("42", "bob")
    assert not OptOutSet() and OptOutSet(channels=frozenset({"1"}))


def test_seen_logins_are_bounded() -> None:
    seen = SeenLogins(most=2)
    users = frozenset({"1", "2", "3"})
    for n, login in enumerate(["a", "b", "c"], start=1):
        seen.learn(_event("PRIVMSG", n=n, login=login, user_id=str(n)), users)
    assert len(seen) <= 2 and "c" in seen
    seen.learn(_event("PRIVMSG", n=9, login="z", user_id="9"), users)  # not opted out: not learned
    assert "z" not in seen
