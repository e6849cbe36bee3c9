"""Matching rules of the search scan: Unicode case folding, substrings across words, query bounds, and
a lazy filter that closes its source when the reader stops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from schemas.chat_event import ChatEvent
from serve.search import BadQuery, fold, matching, needle
from store.line import LogLine, Run


def _event(i: int, text: str, *, kind: str = "PRIVMSG", tags: dict[str, str] | None = None) -> ChatEvent:
    return ChatEvent(
        message_id=f"m{i}",
        kind=kind,
        channel="alpha",
        user_login="bob",
        text=text,
        sent_at=1_700_000_000_000 + i,
        received_at=1_700_000_000_000 + i,
        tags=tags or {},
        raw="",
        ingester="r1",
    )


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("HeLLo", "hello there"),
        ("ß", "STRASSE"),  # ß folds to ss
        ("SS", "Straße"),
        ("straße", "DIE STRASSE"),
        ("CAFÉ", "café"),
        ("café", "CAFE\u0301"),  # composed query, decomposed text
        ("cafe\u0301", "Café"),  # decomposed query, composed text
        ("\u03a3\u039f\u03a6\u039f\u03a3", "\u03c3\u03bf\u03c6\u03bf\u03c2"),  # final sigma folds as sigma
        ("foo bar", "xfoo barx"),  # a term split across words
        ("o b", "xfoo barx"),
    ],
)
def test_matches(query: str, text: str) -> None:
    assert needle(query, max_chars=200).matches(text)


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("cafe", "café"),  # accents count
        ("foobar", "xfoo barx"),  # the space is part of the query
        ("hello", "hell o"),
        ("ss", "\u017f"),  # one long s folds to one s
    ],
)
def test_misses(query: str, text: str) -> None:
    assert not needle(query, max_chars=200).matches(text)


def test_fold_is_casefold_not_lower() -> None:
    assert fold("Straße") == "strasse" and "Straße".lower() == "straße"
    assert fold("ABC def") == "abc def"


def test_events_match_on_their_shown_text() -> None:
    banned = _event(1, "bob", kind="CLEARCHAT")
    assert needle("HAS BEEN BANNED", max_chars=200).matches_event(banned)
    sub = _event(2, "great stream", kind="USERNOTICE", tags={"system-msg": "carol subscribed at Tier 1."})
    assert needle("tier 1. great", max_chars=200).matches_event(sub)
    assert not needle("raw only", max_chars=200).matches_event(_event(3, "nothing"))


@pytest.mark.parametrize("query", [None, "", " ", "\t \n"])
def test_a_missing_or_blank_query_is_refused(query: str | None) -> None:
    with pytest.raises(
        BadQuery, match=r"^missing parameter: q \(the text to search for, 1 \.\. 5 characters\)$"
    ):
        needle(query, max_chars=5)


def test_the_query_bound_is_in_characters() -> None:
    assert needle("ééééé", max_chars=5).query == "ééééé"
    with pytest.raises(BadQuery, match=r"^invalid q: 6 characters, at most 5$"):
        needle("abcdef", max_chars=5)
    assert needle(" a b ", max_chars=5).folded == " a b "  # spaces are kept


def test_matching_is_lazy_in_order_and_closes_its_source() -> None:
    read: list[int] = []
    closed: list[bool] = []

    async def source() -> AsyncIterator[Run]:
        try:
            for i in range(0, 1000, 4):  # runs of four lines
                read.append(i)
                yield [LogLine.of(_event(j, "hello" if j % 10 == 0 else "nope")) for j in range(i, i + 4)]
        finally:
            closed.append(True)

    async def first_three() -> list[list[str]]:
        found = matching(source(), needle("HELLO", max_chars=200))
        out = []
        async for run in found:
            out.append([line.event.message_id for line in run])
            if len(out) == 3:
                break
        await found.aclose()
        return out

    assert asyncio.run(first_three()) == [["m0"], ["m10"], ["m20"]]  # runs without a hit left out
    assert read[-1] == 20  # stopped at the run of the third hit, not at the end of the source
    assert closed == [True]


def test_matching_reads_to_the_end_when_nothing_matches() -> None:
    async def source() -> AsyncIterator[Run]:
        for i in range(50):
            yield [LogLine.of(_event(i, "nope"))]

    async def everything() -> list[Run]:
        return [e async for e in matching(source(), needle("yes", max_chars=200))]

    assert asyncio.run(everything()) == []
