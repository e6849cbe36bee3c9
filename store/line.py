"""A stored line back into the :class:`~schemas.chat_event.ChatEvent` the ingester produced.

A block's frame (:mod:`store.frame`) holds each line without the values of its id and time tags
(:mod:`store.stored_line`), with its ``sent_at``, its ``message_id`` (a uuid) and its ``received_at``. Every
other field of the event is derived by parsing the restored line (:func:`core.irc_parse.parse_line`) with
the stored receive time, so the event is the one the ingester wrote but for ``ingester`` (not stored: None)
and, for lines without a receive time, ``received_at`` (then ``sent_at``). Pure; no driver. A record that
another producer wrote with a ``sent_at`` its line does not give keeps the stored one (its place in the
table).

A line the parser does not turn into an event (a third-party producer's record that is not IRC, a command
that is not chat, a line that is now over a bound) is still given back, never raised: an event whose
``kind`` is the line's command word (else ``UNKNOWN``), ``raw`` the line, ``message_id`` the stored uuid and
``channel`` the channel it was read from.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Final, Protocol, TypeVar, overload

from core.irc_parse import (
    MalformedLine,
    PrivmsgFields,
    command_of,
    line_tags,
    parse_line,
    privmsg_fields,
    privmsg_parts,
    tag_section,
)
from core.irc_tags import PlainTags, plain_json, plain_json_many
from schemas.chat_event import MAX_KIND_CHARS, MAX_LINE_CHARS, ChatEvent
from store.frame import Frame
from store.keys import uuid_text
from store.stored_line import VERBATIM, restore

__all__ = [
    "UNKNOWN_KIND",
    "LogLine",
    "Run",
    "Span",
    "aclose",
    "each_line",
    "frame_line",
    "one_by_one",
    "stored_event",
]

UNKNOWN_KIND: Final = "UNKNOWN"
"""``kind`` of a stored line that has no command word."""


_RESTORED_MAX: Final = MAX_LINE_CHARS - 200
"""A stored line this long may be over the line bound once its id and time are back: parsed whole."""


def stored_event(
    line: str,
    message_id: uuid.UUID | str,
    sent_at_ms: int,
    received_at_ms: int | None,
    channel_login_hint: str,
) -> ChatEvent:
    """The event of a stored line (see the module doc); never raises for any ``line``."""
    raw = restore(line, message_id, sent_at_ms)
    received_at = received_at_ms if received_at_ms is not None else sent_at_ms
    try:
        event = parse_line(raw, received_at=received_at)
    except MalformedLine:
        event = None
    if event is not None:
        if event.sent_at != sent_at_ms:  # a record whose sent_at was not its line's: the stored one stands
            event.sent_at = sent_at_ms
        return event
    command = command_of(raw) if raw else None
    return ChatEvent(
        message_id=str(message_id),
        kind=(command or UNKNOWN_KIND)[:MAX_KIND_CHARS],
        channel=channel_login_hint,
        sent_at=sent_at_ms,
        received_at=received_at,
        raw=raw,
    )


PlainPrivmsg = tuple[str, bytes, str | None, str | None, str, str | None, str | None, bool]
"""``(raw, tags_json, display_name, tag_id, channel, user_login, text, is_action)`` of a chat message whose
tag section is plain (:meth:`LogLine.plain_privmsg`)."""

Chat = tuple[str, str | None, str | None]
"""``(channel, user_login, text)`` of a chat message (PRIVMSG), as its event has them."""


class Owners(Protocol):
    """A block's owners (:class:`store.read.BlockOwner`): the ``(channel id, user id)`` of its line ``index``
    where its channel key and filed-under user key are ids, else None."""

    def of(self, index: int) -> tuple[str, str] | None: ...


class LogLine:
    """One stored event as the reader gives it, parsed at most once, lazily, and handed as it is to every
    formatter and to the consent check: the stored values; the line restored (:attr:`raw`) and parsed
    (:attr:`event`, :func:`core.irc_parse.parse_line`, kept once made) only when asked. A text answer of a
    chat message needs only its channel, sender and text (:meth:`chat`: from :attr:`event` once that is
    made, else read from the stored line without its tags by :func:`core.irc_parse.privmsg_parts`, not
    kept: keeping it costs a text answer more than the rare second read saves); a json answer of one needs
    its tags as well, parsed from the restored line (:meth:`privmsg`); a raw answer no parse. ``sent_at``
    is the stored one, as :attr:`event`'s is.

    A line of a block (:mod:`store.frame`) comes with its chat split as found when it was written
    (``chat`` and ``is_action``, given only where they are the event's): :meth:`chat` is then that, and
    :meth:`privmsg` parses only the restored line's tags. It comes as its block's ``frame`` and its
    ``index`` there instead of its id, line and receive time: those are read from the frame when first
    asked (:meth:`store.frame.Frame.rest`), which a text answer of chat messages never does.

    A line of a channel id, filed under a user id, comes with those ids (``owner``): the opt-out rule's
    answer for it without parsing it (:func:`consent.rule.keyed_verdict`)."""

    __slots__ = (
        "_action",
        "_chat",
        "_event",
        "_frame",
        "_index",
        "_message_id",
        "_owners",
        "_received_at",
        "_stored",
        "_unread",
        "channel_hint",
        "sent_at",
    )

    def __init__(
        self,
        stored: str,
        message_id: uuid.UUID | str,
        sent_at: int,
        received_at: int | None,
        channel_hint: str,
        chat: Chat | None = None,
        is_action: bool = False,
        owners: Owners | None = None,
        frame: Frame | None = None,
        index: int = 0,
    ) -> None:
        self._stored = stored
        self._message_id = message_id
        self.sent_at = sent_at
        self._received_at = received_at
        self._frame = frame
        """The frame the line is ``index`` of (its id, line and receive time are read from there when
        first asked: ``stored``, ``message_id``, ``received_at`` are then those, not the values given)."""
        self._index = index
        self._unread = frame is not None
        self.channel_hint = channel_hint
        """The channel it was read under (the event's channel when its line does not name one)."""
        self._event: ChatEvent | None = None
        self._chat = chat
        """The event's ``(channel, user_login, text)`` as its frame gives them (a PRIVMSG's), or None."""
        self._action = is_action
        """The event's ``is_action`` where :attr:`_chat` is given (else unused)."""
        self._owners = owners
        """Its block's owners (:attr:`owner` asks them only when asked: only an opt-out needs it)."""

    @property
    def owner(self) -> tuple[str, str] | None:
        """``(channel id, user id)`` of the line, where its channel key and filed-under user key are ids."""
        owners = self._owners
        return None if owners is None else owners.of(self._index)

    def _unframe(self) -> None:
        frame = self._frame
        if frame is not None:
            ids, lines, received = frame.rest()
            i = self._index
            self._stored, self._message_id, self._received_at = lines[i], uuid_text(ids[i]), received[i]
        self._unread = False

    @property
    def stored(self) -> str:
        """The line as its frame holds it (:mod:`store.stored_line`)."""
        if self._unread:
            self._unframe()
        return self._stored

    @property
    def message_id(self) -> uuid.UUID | str:
        if self._unread:
            self._unframe()
        return self._message_id

    @property
    def received_at(self) -> int | None:
        if self._unread:
            self._unframe()
        return self._received_at

    @classmethod
    def of(cls, event: ChatEvent) -> LogLine:
        """An event already parsed (read from elsewhere than a block) as a line."""
        line = cls(VERBATIM + event.raw, event.message_id, event.sent_at, event.received_at, event.channel)
        line._event = event
        return line

    @property
    def raw(self) -> str:
        """The IRC line as it was received."""
        if self._event is not None:
            return self._event.raw
        return restore(self.stored, self.message_id, self.sent_at)

    @property
    def event(self) -> ChatEvent:
        """The event (:func:`stored_event`), parsed on first use."""
        if self._event is None:
            self._event = stored_event(
                self.stored, self.message_id, self.sent_at, self.received_at, self.channel_hint
            )
        return self._event

    def chat(self) -> Chat | None:
        """``(channel, user_login, text)`` of a chat message (PRIVMSG) as :attr:`event` has them; None for
        every other line (then :attr:`event` tells): as its frame gave them, else from the event when
        it is parsed, else from the stored line without its tags."""
        chat = self._chat
        if chat is not None:
            return chat
        event = self._event
        if event is not None:
            return (event.channel, event.user_login, event.text) if event.kind == "PRIVMSG" else None
        stored = self.stored
        if len(stored) > _RESTORED_MAX:
            return None
        return privmsg_parts(stored[1:] if stored[:1] == VERBATIM else stored)  # unmarked(), inlined

    def privmsg(self) -> PrivmsgFields | None:
        """``(raw, tags, channel, user_login, text, is_action)`` of a chat message (PRIVMSG) as :attr:`event`
        has them; None for every other line (then :attr:`event` tells): from the event when it is parsed,
        else from the restored line by :func:`core.irc_parse.privmsg_fields` (its tags parsed, not the rest:
        what a json answer shows; not kept, as :meth:`chat`'s are not), or only its tags where its
        frame gave the rest."""
        event = self._event
        if event is not None:
            if event.kind != "PRIVMSG":
                return None
            return event.raw, event.tags, event.channel, event.user_login, event.text, event.is_action
        raw = restore(self.stored, self.message_id, self.sent_at)  # self.raw, inlined
        chat = self._chat
        if chat is None:
            return privmsg_fields(raw)
        return raw, line_tags(raw), chat[0], chat[1], chat[2], self._action

    def plain_privmsg(self) -> PlainPrivmsg | None:
        """:meth:`privmsg` with the tags as their JSON text, made by replaces
        (:func:`core.irc_tags.tags_json`), with the ``display-name`` and ``id`` tags' values (None without
        one), for a framed chat message whose tag section its split found plain
        (:attr:`store.frame.Frame.plains`); None for every other line (:meth:`privmsg` then)."""
        frame, chat = self._frame, self._chat
        if frame is None or chat is None or not frame.plains[self._index] or self._event is not None:
            return None
        if self._unread:  # self.stored and self.message_id, inlined: this runs once per line of an answer
            self._unframe()
        return _plain(restore(self._stored, self._message_id, self.sent_at), chat, self._action)


def _plain(raw: str, chat: Chat, action: bool) -> PlainPrivmsg | None:
    """The :data:`PlainPrivmsg` of a framed chat message restored as ``raw``; None where its tag section is
    not as framed (a frame written by another hand: the parse decides)."""
    section = tag_section(raw)
    return _with_tags(raw, plain_json(section) if section else None, chat, action)


def _with_tags(raw: str, tags: PlainTags | None, chat: Chat, action: bool) -> PlainPrivmsg | None:
    """The :data:`PlainPrivmsg` of chat message ``raw`` given its :func:`plain_json` (None: not plain)."""
    if tags is None:
        return None
    return raw, tags[0], tags[1], tags[2], chat[0], chat[1], chat[2], action


def frame_line(frame: Frame, index: int, owners: Owners | None, channel_hint: str) -> LogLine:
    """The line ``index`` of a block's ``frame`` (its owners ``owners``, read under ``channel_hint``): its
    send time and chat split given, the rest read from the frame when asked."""
    chat, action = frame.chats[index], frame.actions[index]
    return LogLine("", "", frame.sents[index], None, channel_hint, chat, action, owners, frame, index)


class Span(Sequence[LogLine]):
    """Lines of one block's frame, at ``indices`` there, in that order: what the reader hands on for a
    stretch of lines that come from one block (most of a user's month, most of a channel's day). Each is a
    :class:`LogLine` when taken (by index or by iterating: made then, not kept); :meth:`columns` gives the
    send times and chat splits of them all without making one, which is all a text answer of chat
    messages reads."""

    __slots__ = ("_frame", "_hint", "_indices", "_owners")

    def __init__(
        self, frame: Frame, indices: Sequence[int], owners: Owners | None, channel_hint: str
    ) -> None:
        self._frame, self._indices, self._owners, self._hint = frame, indices, owners, channel_hint

    def _line(self, i: int) -> LogLine:
        return frame_line(self._frame, i, self._owners, self._hint)

    def __len__(self) -> int:
        return len(self._indices)

    @overload
    def __getitem__(self, at: int) -> LogLine: ...

    @overload
    def __getitem__(self, at: slice) -> Span: ...

    def __getitem__(self, at: int | slice) -> LogLine | Span:
        if isinstance(at, slice):
            return Span(self._frame, self._indices[at], self._owners, self._hint)
        return self._line(self._indices[at])

    def __iter__(self) -> Iterator[LogLine]:
        line = self._line
        for i in self._indices:
            yield line(i)

    def columns(self) -> tuple[Sequence[int], Sequence[Chat | None]]:
        """The ``sent_at`` of each line, and its :meth:`LogLine.chat` where its frame gives that (None:
        the line itself tells, :meth:`LogLine.chat`)."""
        frame, indices = self._frame, self._indices
        if isinstance(indices, range) and indices.step == 1:
            return frame.sents[indices.start : indices.stop], frame.chats[indices.start : indices.stop]
        sents, chats = frame.sents, frame.chats
        return [sents[i] for i in indices], [chats[i] for i in indices]

    def plain_privmsgs(self) -> list[PlainPrivmsg | None]:
        """:meth:`LogLine.plain_privmsg` of each line, without making the lines (a json answer of a packed
        month's chat messages reads these: one pass over the frame's columns, ~1 us a line less)."""
        frame = self._frame
        chats, plains, sents = frame.chats, frame.plains, frame.sents
        ids, stored, _ = frame.rest()
        actions = frame.actions
        found: list[tuple[int, str, Chat, bool]] = []  # each plain chat message: its place, raw, chat, /me
        sections: list[str] = []
        for k, i in enumerate(self._indices):
            chat = chats[i]
            if chat is not None and plains[i]:
                raw = restore(stored[i], uuid_text(ids[i]), sents[i])
                section = tag_section(raw)
                if section:
                    found.append((k, raw, chat, actions[i]))
                    sections.append(section)
        out: list[PlainPrivmsg | None] = [None] * len(self._indices)
        if not found:
            return out
        for (k, raw, said, action), tags in zip(found, plain_json_many(sections), strict=True):
            # None where not as framed (a frame written by another hand): the parse decides
            out[k] = _with_tags(raw, tags, said, action)
        return out

    def owners(self) -> list[tuple[str, str]] | None:
        """:attr:`LogLine.owner` of each line; None when a line has none (filed under no id)."""
        table = self._owners
        if table is None:
            return None
        owners: list[tuple[str, str]] = []
        for i in self._indices:
            owner = table.of(i)
            if owner is None:
                return None
            owners.append(owner)
        return owners

    def kept(self, keep: Sequence[bool]) -> Span:
        """The lines whose ``keep`` (one per line, in order) is true."""
        return Span(
            self._frame, [i for i, k in zip(self._indices, keep, strict=True) if k], self._owners, self._hint
        )


Run = Sequence[LogLine]
"""Lines handed on together, in order: a :class:`Span` of one block, or a list."""


async def each_line(runs: AsyncIterator[Run]) -> AsyncIterator[LogLine]:
    """The lines of ``runs``, one by one; closing this closes ``runs``."""
    try:
        async for run in runs:
            for line in run:
                yield line
    finally:
        await aclose(runs)


async def one_by_one(lines: AsyncIterator[LogLine]) -> AsyncIterator[Run]:
    """``lines`` as runs of one line each (a source that gives lines one at a time); closing this closes
    ``lines``."""
    try:
        async for line in lines:
            yield [line]
    finally:
        await aclose(lines)


async def aclose(source: object) -> None:
    """Close an async source (an async generator, a paged query) if it can be closed: a reader that stops
    early (a limit reached, a client gone) ends the source's queries at once."""
    close = getattr(source, "aclose", None)
    if close is not None:
        await close()


_Source = TypeVar("_Source")


@asynccontextmanager
async def closing(source: _Source) -> AsyncIterator[_Source]:
    """``source`` for the ``async with`` block, closed (:func:`aclose`) when the block ends however it ends:
    an answer that stops early ends the source's queries at once."""
    try:
        yield source
    finally:
        await aclose(source)
