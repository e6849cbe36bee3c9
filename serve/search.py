"""Case-insensitive substring search over a stream of events, by scanning.

Cassandra 5.0's SAI has no text analyzer and SASI is off by default (``sasi_indexes_enabled: false``), so
a search reads the bounded range through the :class:`~store.protocol.LogStore` at reader speed and keeps
the events whose shown text (:func:`serve.formats.friendly_text`: what the text line and ``text`` field show)
contains the query. Matching is Unicode-aware: both sides are NFC-normalised and case-folded
(``str.casefold``: ``ß`` matches ``SS``, ``É`` matches ``é``, a decomposed ``é`` matches a composed one;
accents still count, ``cafe`` does not match ``café``). The query is one substring, spaces included: ``foo
bar`` matches ``xfoo barx``. The scan is lazy: the caller stops reading when it has ``limit`` hits, and the
store stops with it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from schemas.chat_event import ChatEvent
from serve.formats import friendly_text, line_text
from store.line import LogLine, Run, aclose


class BadQuery(ValueError):
    """The search query cannot be used (empty or too long); the message says why, in one line."""


def fold(text: str) -> str:
    """``text`` as it is compared: NFC, then case-folded (full Unicode folding, not ``lower``)."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return text.casefold()


@dataclass(frozen=True, slots=True)
class Needle:
    """A parsed query: what it looks for, folded."""

    query: str
    folded: str

    def matches(self, text: str) -> bool:
        return self.folded in fold(text)

    def matches_event(self, event: ChatEvent) -> bool:
        return self.matches(friendly_text(event))

    def matches_line(self, line: LogLine) -> bool:
        return self.matches(line_text(line))


def needle(query: str | None, *, max_chars: int) -> Needle:
    """The needle of ``query``; :class:`BadQuery` when it is missing, blank or over ``max_chars``."""
    if query is None or not query.strip():
        raise BadQuery(f"missing parameter: q (the text to search for, 1 .. {max_chars} characters)")
    if len(query) > max_chars:
        raise BadQuery(f"invalid q: {len(query)} characters, at most {max_chars}")
    return Needle(query, fold(query))


async def matching(runs: AsyncIterator[Run], wanted: Needle) -> AsyncGenerator[Run, None]:
    """The lines of ``runs`` that ``wanted`` matches, in their order, run by run (a run with none is
    left out); closing this closes ``runs``."""
    try:
        async for run in runs:
            found = [line for line in run if wanted.matches_line(line)]
            if found:
                yield found
    finally:
        await aclose(runs)
