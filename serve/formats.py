"""The response formats of justlog and rustlog, event by event.

Read from their sources (gempir/justlog ``api/server.go``; boring-nick/rustlog ``src/web/responders`` and
``src/logs/schema``), not copied:

* **text** (the default): ``[2024-01-02 15:04:05] #channel username: text``, or ``[...] #channel text``
  for an event without a user (a ban, a cleared chat), one line each, UTC. The date is zero-padded as
  rustlog writes it (justlog wrote ``2024-01-2``). Lines end with ``\\n`` (rustlog: ``\\r\\n``; both split
  the same way). Control characters in the text are shown as escapes (:mod:`serve.terminal`) so a line
  stays one line.
* **raw**: the IRC line as received.
* **json** (``{"messages": [...]}``): justlog's ``chatMessage`` (``text``, ``systemText``, ``username``,
  ``displayName``, ``channel``, ``timestamp``, ``id``, ``type``, ``raw``, ``tags``), what justlog's web
  frontend asks for (``?json``) and renders: a USERNOTICE's ``text`` is the user's words only (the
  positions of the ``emotes`` tag index them) and ``systemText`` its ``system-msg``; a CLEARCHAT names
  its target login as ``username`` and ``displayName``, its sentence in ``systemText`` only (``text`` is
  empty).
* **jsonBasic**: rustlog's ``BasicMessage`` (``text``, ``displayName``, ``timestamp``, ``id``, ``tags``),
  what rustlog's web frontend asks for (``?jsonBasic``): ``text`` is the "user friendly" text below and a
  CLEARCHAT's ``displayName`` its target login. A CLEARMSG's ``text`` says whose message was deleted (as
  ``systemText`` does): rustlog keeps a deletion in no user's log (it has no ``user-id``), chatlog keeps
  it in the user's, and rustlog's frontend, which prints ``displayName: text``, drew it as a name alone.
* **ndjson** (one per line): rustlog's ``FullMessage`` (the basic fields plus ``username``, ``channel``,
  ``raw``, ``type``) plus justlog's ``systemText``. A CLEARCHAT's ``username`` is empty there (the text
  format's line has no user).
* **web** (one per line), chatlog's web page's own, and the live events of ``/api/live``: the ndjson
  message plus what the page would otherwise read from ``raw`` (:func:`page_fields`): ``action`` (a
  ``/me`` message) and ``deletedText`` (what a deleted message said); ``?web`` leaves ``raw`` out (the
  page does not read it), ``/api/live`` keeps it.
* ``type`` is go-twitch-irc's message type number (rustlog's ``MessageType``): PRIVMSG 1, CLEARCHAT 2,
  USERNOTICE 4, ... -1 for a command it does not know.
* ``timestamp`` is RFC 3339 in UTC, milliseconds shown when there are any (``2024-01-02T15:04:05.123Z``).
* The "user friendly" text (rustlog's; in ``jsonBasic``, ``ndjson`` and the text format): a CLEARCHAT
  reads ``<login> has been banned`` / ``<login> has been timed out for <n> seconds`` / ``Chat has been
  cleared``; a USERNOTICE its ``system-msg`` then the user's message.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

import msgspec

from schemas.chat_event import ChatEvent
from serve.terminal import escape_controls
from store.line import Span

if TYPE_CHECKING:
    from core.irc_parse import PrivmsgFields
    from store.line import LogLine, PlainPrivmsg, Run

MESSAGE_TYPES: Final[dict[str, int]] = {
    "WHISPER": 0,
    "PRIVMSG": 1,
    "CLEARCHAT": 2,
    "ROOMSTATE": 3,
    "USERNOTICE": 4,
    "USERSTATE": 5,
    "NOTICE": 6,
    "JOIN": 7,
    "PART": 8,
    "RECONNECT": 9,
    "353": 10,
    "PING": 11,
    "PONG": 12,
    "CLEARMSG": 13,
    "GLOBALUSERSTATE": 14,
}
UNKNOWN_TYPE: Final = -1
_DAY_S: Final = 86_400
_TWO: Final = tuple(f"{n:02d}" for n in range(60))
"""``00`` ... ``59``: a time of day from three lookups (``:02d`` formatting costs ~0.2 µs a field)."""
_THREE: Final = tuple(f"{n:03d}" for n in range(1000))
"""``000`` ... ``999``: milliseconds by a lookup, as :data:`_TWO`."""

_PRIVMSG_TYPE: Final = MESSAGE_TYPES["PRIVMSG"]
_encoder = msgspec.json.Encoder()
_encode = _encoder.encode
_encode_lines = _encoder.encode_lines


def message_type(event: ChatEvent) -> int:
    """go-twitch-irc's number of the event's IRC command (-1: not one it knows)."""
    return MESSAGE_TYPES.get(event.kind.upper(), UNKNOWN_TYPE)


def system_text(event: ChatEvent) -> str:
    """justlog's ``systemText``: the ban text of a CLEARCHAT, the ``system-msg`` of a USERNOTICE, and (not
    in justlog, which keeps no CLEARMSG) who had a message deleted."""
    if event.kind == "CLEARCHAT":
        return _clearchat_text(event)
    if event.kind == "USERNOTICE":
        return event.tags.get("system-msg", "")
    if event.kind == "CLEARMSG":
        return f"a message of {event.user_login} was deleted" if event.user_login else "a message was deleted"
    return ""


def _unwrap_action(text: str) -> str:
    """A ``\\x01ACTION ...\\x01`` text without its wrapper (rustlog's ``extract_message_text``)."""
    if text.startswith("\x01ACTION ") and text.endswith("\x01"):
        return text[8:-1]
    return text


def _clearchat_text(event: ChatEvent) -> str:
    target = event.text or ""
    if not target:
        return "Chat has been cleared"
    duration = event.tags.get("ban-duration")
    if duration:
        return f"{target} has been timed out for {duration} seconds"
    return f"{target} has been banned"


def friendly_text(event: ChatEvent) -> str:
    """The text shown for the event (rustlog's ``user_friendly_text``): a deleted message's CLEARMSG has
    none (it is not something its user said again; the deleted text is in the tags and the raw line)."""
    text = event.text or ""
    if event.kind == "CLEARCHAT":
        return _clearchat_text(event)
    if event.kind == "USERNOTICE":
        system = event.tags.get("system-msg", "")
        text = _unwrap_action(text)
        if system and text:
            return f"{system} {text}"
        return system or text
    if event.kind == "CLEARMSG":
        return ""
    return text


def timestamp(ms: int) -> str:
    """RFC 3339 in UTC: ``2024-01-02T15:04:05Z``, with ``.123`` when the milliseconds are not zero."""
    second, milli = divmod(ms, 1000)
    hour, rest = divmod(second, 3600)
    minute, sec = divmod(rest, 60)
    if milli:
        return f"{_iso_hour(hour)}{_TWO[minute]}:{_TWO[sec]}.{_THREE[milli]}Z"
    return f"{_iso_hour(hour)}{_TWO[minute]}:{_TWO[sec]}Z"


@lru_cache(maxsize=4096)
def _iso_hour(hour: int) -> str:
    """``2024-01-02T15:``: :func:`_hour` as RFC 3339 writes it."""
    return _hour(hour).replace(" ", "T", 1)


@lru_cache(maxsize=256)
def _date(day: int) -> str:
    """``2024-01-02``: the UTC date of the ``day``-th day after 1970-01-01 (a log's lines share a few)."""
    return datetime.fromtimestamp(day * _DAY_S, UTC).strftime("%Y-%m-%d")


@lru_cache(maxsize=4096)
def _hour(hour: int) -> str:
    """``2024-01-02 15:``: the UTC date and hour of the ``hour``-th hour after 1970-01-01 (a user's month
    of lines has a few hundred; a cached call is ~0.1 µs, the arithmetic ~0.4)."""
    day, hour_of_day = divmod(hour, 24)
    return f"{_date(day)} {_TWO[hour_of_day]}:"


def _text_line(sent_at: int, channel: str, user: str | None, text: str) -> str:
    """The one text line rule: ``[2024-01-02 15:04:05] #channel user: text`` (no ``user:`` without a user),
    controls escaped (:func:`~serve.terminal.escape_controls`; the usual line, printable, is not copied)."""
    hour, rest = divmod(sent_at // 1000, 3600)
    minute, second = divmod(rest, 60)
    line = (
        f"[{_hour(hour)}{_TWO[minute]}:{_TWO[second]}] #{channel} {user}: {text}"
        if user
        else f"[{_hour(hour)}{_TWO[minute]}:{_TWO[second]}] #{channel} {text}"
    )
    return line if line.isprintable() else escape_controls(line)


def text_line(event: ChatEvent) -> str:
    """The justlog/rustlog text line of the event, without its line end. A CLEARMSG says whose message
    was deleted, and what it said: ``[...] #chan a message of alice was deleted: the text``."""
    if event.kind == "CLEARMSG":
        said = f": {event.text}" if event.text else ""
        return _text_line(event.sent_at, event.channel, None, system_text(event) + said)
    return _text_line(event.sent_at, event.channel, event.user_login, friendly_text(event))


def line_text(line: LogLine) -> str:
    """:func:`friendly_text` of a stored line's event; a chat message's without parsing it whole."""
    chat = line.chat()
    return friendly_text(line.event) if chat is None else chat[2] or ""


def log_text_line(line: LogLine) -> str:
    """:func:`text_line` of a stored line's event; a chat message's without parsing it whole
    (:meth:`~store.line.LogLine.chat`)."""
    chat = line.chat()
    if chat is None:
        return text_line(line.event)
    channel, user, text = chat
    return _text_line(line.sent_at, channel, user, text or "")


def log_text_bytes(line: LogLine) -> bytes:
    """:func:`log_text_line` and its line end, encoded: a text answer's line."""
    return (log_text_line(line) + "\n").encode()


def log_text_run(run: Run) -> bytes:
    """:func:`log_text_bytes` of each line of ``run``, joined: a chat message's line made here from its
    send time and chat split (a block's :meth:`~store.line.Span.columns`, no line object made), any other
    line's by :func:`log_text_line`. One call per run: a user's month is ~300 lines in one or two runs."""
    if isinstance(run, Span):
        sents, chats = run.columns()
    else:
        sents, chats = [line.sent_at for line in run], [line.chat() for line in run]
    out = [
        log_text_line(run[at]) if chat is None else _text_line(sent_at, chat[0], chat[1], chat[2] or "")
        for at, (sent_at, chat) in enumerate(zip(sents, chats, strict=True))
    ]
    out.append("")
    return "\n".join(out).encode()


# -- the json messages: one shape each, its keys in the order they are sent ---------------------------


class BasicMessage(msgspec.Struct):
    """rustlog's ``BasicMessage`` (``?jsonBasic``). The fields have the names they are sent under (camelCase
    ones too: a dict of the message, :func:`msgspec.structs.asdict`, has them without a renaming step)."""

    text: str
    displayName: str  # noqa: N815
    timestamp: str
    id: str
    """Twitch's message id (the ``id`` tag); "" without one (rustlog)."""
    tags: dict[str, str] | msgspec.Raw
    """The event's own; sent as their JSON text where that is known exactly (:func:`_plain_full`)."""


class FullMessage(BasicMessage):
    """rustlog's ``FullMessage`` plus justlog's ``systemText`` (``?ndjson``); justlog's ``chatMessage``
    (``?json``) has the same keys."""

    username: str
    channel: str
    raw: str
    type: int
    systemText: str  # noqa: N815


class PageMessage(BasicMessage):
    """The web page's message (``?web``): :class:`FullMessage`'s keys but ``raw``, then those of
    :func:`page_fields`."""

    username: str
    channel: str
    type: int
    systemText: str  # noqa: N815
    action: bool
    deletedText: str  # noqa: N815


def _as_dict(message: BasicMessage) -> dict[str, Any]:
    """The message as a dict, its keys as they are sent and in that order (``tags`` is the event's own)."""
    return msgspec.structs.asdict(message)


def _basic(event: ChatEvent) -> BasicMessage:
    text = system_text(event) if event.kind == "CLEARMSG" else friendly_text(event)
    return BasicMessage(
        text, _display_name(event), timestamp(event.sent_at), event.tags.get("id", ""), event.tags
    )


def basic_message(event: ChatEvent) -> dict[str, Any]:
    """rustlog's ``BasicMessage`` (``?jsonBasic``); a CLEARMSG's ``text`` is its :func:`system_text`."""
    return _as_dict(_basic(event))


def _display_name(event: ChatEvent) -> str:
    return event.display_name or event.user_login or _clearchat_target(event)


def _clearchat_target(event: ChatEvent) -> str:
    """The login a CLEARCHAT bans or times out ("" for another kind, or a cleared chat)."""
    return (event.text or "").strip() if event.kind == "CLEARCHAT" else ""


def _full(event: ChatEvent) -> FullMessage:
    return FullMessage(
        friendly_text(event),
        _display_name(event),
        timestamp(event.sent_at),
        event.tags.get("id", ""),
        event.tags,
        event.user_login or "",
        event.channel,
        event.raw,
        message_type(event),
        system_text(event),
    )


def full_message(event: ChatEvent) -> dict[str, Any]:
    """rustlog's ``FullMessage`` plus justlog's ``systemText`` (a CLEARMSG's ``text`` is "", rustlog's)."""
    return _as_dict(_full(event))


def _json(event: ChatEvent) -> FullMessage:
    message = _full(event)
    if event.kind == "USERNOTICE":
        message.text = _unwrap_action(event.text or "")
    elif event.kind == "CLEARCHAT":
        target = _clearchat_target(event)
        message.text, message.username, message.displayName = "", target, target
    return message


def json_message(event: ChatEvent) -> dict[str, Any]:
    """justlog's ``chatMessage`` (``createChatMessage`` in its ``api/server.go``): :func:`full_message`
    but a USERNOTICE's ``text`` is the user's words only, and a CLEARCHAT names its target as
    ``username`` and ``displayName`` with its sentence in ``systemText`` only."""
    return _as_dict(_json(event))


def _page_values(event: ChatEvent) -> tuple[bool, str]:
    return event.is_action and event.kind == "PRIVMSG", (event.text or "") if event.kind == "CLEARMSG" else ""


def page_fields(event: ChatEvent) -> dict[str, Any]:
    """What the web page shows that the justlog/rustlog messages do not hold outside ``raw``: whether a chat
    message is a ``/me`` (``action``), and what a deleted message said (``deletedText``: a CLEARMSG's
    ``text`` is "", rustlog's)."""
    action, deleted_text = _page_values(event)
    return {"action": action, "deletedText": deleted_text}


def _page(full: FullMessage, action: bool, deleted_text: str) -> PageMessage:
    return PageMessage(
        full.text,
        full.displayName,
        full.timestamp,
        full.id,
        full.tags,
        full.username,
        full.channel,
        full.type,
        full.systemText,
        action,
        deleted_text,
    )


def page_message(event: ChatEvent) -> dict[str, Any]:
    """The web page's message (``?web``): :func:`full_message` without ``raw``, with :func:`page_fields`."""
    return _as_dict(_page(_full(event), *_page_values(event)))


def encode_json(value: Any) -> bytes:
    """Compact JSON."""
    return _encode(value)


# -- a stored line's message as bytes: a chat message's without parsing it whole ----------------------
# The PRIVMSG case of the rules above (friendly_text: its text; system_text: ""; _display_name: the
# display-name tag, else the sender's login; a json message is its full message; page_fields: its /me
# flag), held equal to them byte for byte by tests/unit/serve/test_formats_json.py.


def _privmsg_full(sent_at: int, fields: PrivmsgFields) -> FullMessage:
    raw, tags, channel, user, text, _ = fields
    return FullMessage(
        text or "",
        tags.get("display-name") or user or "",
        timestamp(sent_at),
        tags.get("id", ""),
        tags,
        user or "",
        channel,
        raw,
        _PRIVMSG_TYPE,
        "",
    )


def _plain_full(sent_at: int, plain: PlainPrivmsg) -> FullMessage:
    """:func:`_privmsg_full` of a chat message whose tags are given as their JSON text (the same bytes)."""
    raw, tags, display_name, tag_id, channel, user, text, _ = plain
    return FullMessage(
        text or "",
        display_name or user or "",
        timestamp(sent_at),
        tag_id or "",
        msgspec.Raw(tags),
        user or "",
        channel,
        raw,
        _PRIVMSG_TYPE,
        "",
    )


def _chat_full(line: LogLine) -> tuple[FullMessage, bool] | None:
    """The full message of a chat message and its ``/me`` flag, without parsing it whole: its tags' JSON
    by replaces where its packed month found them plain (:meth:`~store.line.LogLine.plain_privmsg`),
    else its tags parsed (:meth:`~store.line.LogLine.privmsg`); None for every other line."""
    plain = line.plain_privmsg()
    if plain is not None:
        return _plain_full(line.sent_at, plain), plain[7]
    fields = line.privmsg()
    return None if fields is None else (_privmsg_full(line.sent_at, fields), fields[5])


def _json_of(line: LogLine) -> FullMessage:
    chat = _chat_full(line)
    return _json(line.event) if chat is None else chat[0]


def _full_of(line: LogLine) -> FullMessage:
    chat = _chat_full(line)
    return _full(line.event) if chat is None else chat[0]


def _basic_of_full(full: FullMessage) -> BasicMessage:
    return BasicMessage(full.text, full.displayName, full.timestamp, full.id, full.tags)


def _basic_plain(sent_at: int, plain: PlainPrivmsg) -> BasicMessage:
    return _basic_of_full(_plain_full(sent_at, plain))


def _basic_of(line: LogLine) -> BasicMessage:
    chat = _chat_full(line)
    return _basic(line.event) if chat is None else _basic_of_full(chat[0])


def _page_plain(sent_at: int, plain: PlainPrivmsg) -> PageMessage:
    return _page(_plain_full(sent_at, plain), plain[7], "")


def _page_of(line: LogLine) -> PageMessage:
    chat = _chat_full(line)
    if chat is None:
        event = line.event
        return _page(_full(event), *_page_values(event))
    return _page(chat[0], chat[1], "")


def log_json_bytes(line: LogLine) -> bytes:
    """``encode_json(json_message(line.event))``; a chat message's without parsing it whole
    (:func:`_chat_full`)."""
    return _encode(_json_of(line))


def log_full_bytes(line: LogLine) -> bytes:
    """``encode_json(full_message(line.event))``; a chat message's without parsing it whole."""
    return _encode(_full_of(line))


def log_basic_bytes(line: LogLine) -> bytes:
    """``encode_json(basic_message(line.event))``; a chat message's without parsing it whole."""
    return _encode(_basic_of(line))


def log_page_bytes(line: LogLine) -> bytes:
    """``encode_json(page_message(line.event))``; a chat message's without parsing it whole."""
    return _encode(_page_of(line))


# -- a run's messages at once: a block's chat messages read from its columns, encoded in one call ---------


def _messages(
    run: Run,
    plain: Callable[[int, PlainPrivmsg], BasicMessage],
    other: Callable[[LogLine], BasicMessage],
) -> list[BasicMessage]:
    """The message of each line of ``run``: ``plain`` of the send time and plain fields of a block's chat
    message whose tags are plain (:meth:`~store.line.Span.plain_privmsgs`, no line object made), ``other``
    of every other line."""
    if not isinstance(run, Span):
        return [other(line) for line in run]
    sents = run.columns()[0]
    return [
        other(run[at]) if p is None else plain(sent_at, p)
        for at, (sent_at, p) in enumerate(zip(sents, run.plain_privmsgs(), strict=True))
    ]


def log_json_run(run: Run) -> bytes:
    """:func:`log_json_bytes` of each line of ``run``, joined by commas (a json array's items)."""
    return _encode(_messages(run, _plain_full, _json_of))[1:-1]


def log_basic_run(run: Run) -> bytes:
    """:func:`log_basic_bytes` of each line of ``run``, joined by commas."""
    return _encode(_messages(run, _basic_plain, _basic_of))[1:-1]


def log_full_run(run: Run) -> bytes:
    """:func:`log_full_bytes` of each line of ``run``, each ended by a line end (ndjson)."""
    return _encode_lines(_messages(run, _plain_full, _full_of))


def log_page_run(run: Run) -> bytes:
    """:func:`log_page_bytes` of each line of ``run``, each ended by a line end."""
    return _encode_lines(_messages(run, _page_plain, _page_of))
