"""One raw IRC line into a :class:`schemas.chat_event.ChatEvent` (the ingester's hot path).

The mapping is the contract table of ARCHITECTURE.md; the choices it leaves open are made here:

* ``CHAT_COMMANDS`` are the commands that become events: PRIVMSG, USERNOTICE (subs, raids, ...),
  CLEARCHAT (ban, timeout, chat cleared), CLEARMSG (one message deleted) and NOTICE. ROOMSTATE is not
  one: Twitch sends the full room state on every JOIN (ingesters re-join on every rebalance, and there
  are R replicas), it carries neither an id nor a timestamp, and each *change* of a room mode already
  arrives as a NOTICE (``msg-id=slow_on``, ``emote_only_off``...), which is logged. USERSTATE and
  GLOBALUSERSTATE describe our own (anonymous) user, WHISPER and HOSTTARGET are not channel chat.
* A NOTICE whose target is not a channel (``NOTICE * :Login unsuccessful``, the ``*** Looking up your
  hostname`` notices of a connecting IRC server) is not a chat event: ``None``. Every other chat command
  must name a ``#channel`` first, or the line is a :class:`MalformedLine`.
* ``raw`` is the line without its terminator: a trailing ``\\r`` (left by splitting on ``\\n``) is removed
  before anything else, so ``raw`` and the hashed id do not depend on how a reader split lines.
* ``message_id`` is the Twitch ``id`` tag, else IRCv3 ``msgid``, else :func:`line_hash` of the whole
  line: tags, prefix and text. Nothing in an IRC line is private to the connection that received it
  (the receive time and the worker id are not part of the line), so two ingesters that read the same
  line compute the same id. The timestamp tags stay in the hashed text on purpose: CLEARCHAT and
  CLEARMSG carry ``tmi-sent-ts``, so two identical timeouts at different times keep different ids.
  Lines with neither an id nor a timestamp (Twitch NOTICE, plain IRC servers) that are byte-identical
  share an id, and the sink keeps one of them; that is the price of the cross-ingester guarantee.
* ``user_login`` is the sender: the ``login`` tag, else the nick of a ``nick!user@host`` prefix. A
  server prefix (``tmi.twitch.tv``, ``irc.local``: it has a dot, which nicks cannot) is no sender, so
  CLEARCHAT gets ``None``; its target is in ``text`` and the ``target-user-id`` tag.
* Tags with an empty value count as missing for ``id``, ``room-id``, ``user-id``, ``display-name``,
  ``tmi-sent-ts`` and ``time`` (the IRCv3 spec makes ``k=`` and ``k`` equivalent).
* A server time that is not plausible (``tmi-sent-ts`` not 13 ASCII digits with a first digit other
  than 0, i.e. negative, not a number or before 2001-09-09, or more than a day after the receive time;
  a ``time`` that is not ISO-8601 or as implausible) is not an error: Twitch really sent a CLEARMSG with
  ``tmi-sent-ts=-6795364578871``. ``sent_at`` is then the receive time, as for a line without one,
  and the event's ``bad_sent_ts`` holds the server's value (chatlog's note, not one of the line's
  ``tags``, which stay the line's own; the hashed id does not change, it is the line's).
* Nothing the contract's bounds (:mod:`schemas.chat_event`) reject is produced: a line longer than
  ``MAX_LINE_CHARS``, a channel or login longer than ``MAX_LOGIN_CHARS``, an ``id``/``msgid`` longer
  than ``MAX_MESSAGE_ID_CHARS`` or a ``room-id``/``user-id`` longer than ``MAX_ID_CHARS`` make the
  line a :class:`MalformedLine` (the ingester dead-letters it with the reason). Every other string of
  the event is part of the line, so the line's bound bounds it, and so is the number of tags.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from core.irc_tags import parse_tags, unescape_tag_value
from core.times import epoch_ms
from schemas.chat_event import (
    MAX_ID_CHARS,
    MAX_LINE_CHARS,
    MAX_LOGIN_CHARS,
    MAX_MESSAGE_ID_CHARS,
    MAX_SENT_AHEAD_MS,
    MIN_PLAUSIBLE_SENT_MS,
    ChatEvent,
)

__all__ = [
    "CHAT_COMMANDS",
    "MODERATION_KINDS",
    "USER_KINDS",
    "IrcMessage",
    "MalformedLine",
    "PrivmsgFields",
    "command_of",
    "line_hash",
    "line_tags",
    "parse_line",
    "parse_message",
    "prefix_nick",
    "privmsg_fields",
    "privmsg_parts",
    "route_by_command",
    "sender_of",
    "tag_section",
    "unescape_tag_value",
    "with_tags",
]

MODERATION_KINDS: Final[frozenset[str]] = frozenset({"CLEARCHAT", "CLEARMSG"})
"""The events a moderator causes (a ban or timeout, a deleted message): the server sends them, and the user
they concern is their target (``target-user-id``; the login in CLEARCHAT's text or CLEARMSG's ``login``
tag), not a sender."""
USER_KINDS: Final[frozenset[str]] = frozenset({"PRIVMSG", "USERNOTICE"})
"""The events a user's own action makes (a message; a sub, raid or other notice of theirs): what a user
said, as a random line or a deleted one is picked from."""
CHAT_COMMANDS: Final[frozenset[str]] = USER_KINDS | {"NOTICE"} | MODERATION_KINDS

_HALF_LOGIN: Final = MAX_LOGIN_CHARS // 2


class MalformedLine(ValueError):
    """A line that is empty, not IRC, or a chat command that is broken; the message is the reason."""


def line_hash(line: str) -> str:
    """The id of a line that has none: blake2b-128 of its UTF-8 bytes, 32 hex digits (never a UUID)."""
    return hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _short(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _framed(line: str) -> tuple[str, str, str]:
    """``(tag section, prefix, rest)`` of a raw line, the rest starting at its command (spaces between
    the parts may repeat); empty strings for what it does not have (a tag section or prefix with
    nothing after it: no rest)."""
    tags = prefix = ""
    rest = line
    if rest[:1] == "@":
        tags, _, rest = rest[1:].partition(" ")
        rest = rest.lstrip(" ")
    if rest[:1] == ":":
        prefix, _, rest = rest[1:].partition(" ")
        rest = rest.lstrip(" ")
    return tags, prefix, rest


def command_of(line: str) -> str | None:
    """The command token of a raw line as written (servers send upper case); ``None`` if it has none."""
    command = _framed(line)[2].partition(" ")[0].rstrip("\r")
    return command or None


def with_tags(line: str, extra: dict[str, str]) -> str:
    """The IRC ``line`` with ``extra`` tags set (after its own, replacing those of the same name; values
    as given, already escaped)."""
    if line.startswith("@"):
        head, _, rest = line[1:].partition(" ")
        own = [tag for tag in head.split(";") if tag and tag.partition("=")[0] not in extra]
    else:
        own, rest = [], line
    tags = own + [f"{key}={value}" for key, value in extra.items()]
    return f"@{';'.join(tags)} {rest}"


@dataclass(frozen=True, slots=True)
class IrcMessage:
    """A line taken apart by the general IRC grammar (``[@tags] [:prefix] COMMAND params [:trailing]``),
    for the lines that are not chat events (PING, numerics, JOIN echoes, CAP replies...): nothing in it
    is checked or bounded. ``tags`` is the raw tag section, ``command`` is in upper case."""

    tags: str
    prefix: str
    command: str
    params: tuple[str, ...]

    @property
    def sender(self) -> str | None:
        """The sender's login in the prefix (:func:`prefix_nick`): None for a server or no prefix."""
        return prefix_nick(self.prefix)

    def tag(self, key: str) -> str | None:
        """The value of tag ``key`` (unescaped; ``""`` for a tag without a value), None when absent."""
        return parse_tags(self.tags).get(key) if self.tags else None


def parse_message(line: str) -> IrcMessage:
    """Any IRC line as an :class:`IrcMessage` (never an error: a line without a command has ``""``)."""
    tags, prefix, rest = _framed(line)
    command, _, params = rest.partition(" ")
    return IrcMessage(tags, prefix, command.upper(), tuple(_split_params(params)))


def route_by_command(
    lines: list[str],
    commands: AbstractSet[str],
    handle: Callable[[str], bool],
    counts: dict[str, int] | None = None,
) -> list[str]:
    """Give every line whose command is in ``commands`` (or a numeric reply) to ``handle``, return the
    others in order: the ingester's split of protocol lines from chat, at its read rate.

    :func:`command_of` for a whole batch, in one tight loop: a chat line (``@tags :prefix PRIVMSG
    #channel ...``) takes the shortest path, and the command is only cut out for the others. It reads
    the usual framing, one space between the parts (a line with more goes to the caller, whose parse
    of it is exact). ``handle(line)`` returns True when it consumed the line, False to pass it on. With
    ``counts``, each returned line whose first parameter is a ``#channel`` adds one to
    ``counts[channel]`` (as the server spells it), from the positions found anyway: per-channel message
    rates cost no extra scan of the line.
    """
    out: list[str] = []
    keep = out.append
    counting = counts is not None
    tally: dict[str, int] = counts if counts is not None else {}
    get = tally.get
    for line in lines:
        p = line.find(" ") + 1 if line[0] == "@" else 0  # start of ":prefix" or of the command
        if line.startswith(":", p):
            q = line.find(" ", p)  # the space before the command
            if line.startswith(" PRIVMSG #", q):
                keep(line)
                if counting:
                    start = q + 10
                    end = line.find(" ", start)
                    ch = line[start:end] if end >= 0 else line[start:]
                    tally[ch] = get(ch, 0) + 1
                continue
            p = q + 1
        e = line.find(" ", p)
        cmd = line[p:e] if e >= 0 else line[p:]
        if (cmd in commands or (len(cmd) == 3 and cmd.isdigit())) and handle(line):
            continue
        keep(line)
        if counting and e >= 0 and line.startswith(" #", e):
            end = line.find(" ", e + 2)
            ch = line[e + 2 : end] if end >= 0 else line[e + 2 :]
            tally[ch] = get(ch, 0) + 1
    return out


def _iso_to_ms(value: str) -> int | None:
    """IRCv3 ``time`` (``2026-11-21T15:04:05.123Z``) as epoch ms; no zone means UTC; None if not a time."""
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    try:
        return epoch_ms(stamp)  # no zone: UTC
    except OverflowError:  # an offset that moves year 1 or 9999 out of datetime's range
        return None


def _check_ids(message_id: str, channel_id: str | None, user_id: str | None) -> None:
    if len(message_id) > MAX_MESSAGE_ID_CHARS:
        raise _too_long("message id", message_id, MAX_MESSAGE_ID_CHARS)
    for what, value in (("room-id", channel_id), ("user-id", user_id)):
        if value is not None and len(value) > MAX_ID_CHARS:
            raise _too_long(what, value, MAX_ID_CHARS)


def _too_long(what: str, value: str, limit: int) -> MalformedLine:
    return MalformedLine(f"{what} longer than {limit} characters ({len(value)}): {_short(value)}")


def _split_params(params: str) -> list[str]:
    """The general IRC parameter grammar: middles separated by spaces, then an optional ``:trailing``."""
    if params[:1] == ":":
        return [params[1:]]
    middle, sep, trailing = params.partition(" :")
    out = [p for p in middle.split(" ") if p]  # only U+0020 separates parameters, not any whitespace
    if sep:
        out.append(trailing)
    return out


def prefix_nick(prefix: str) -> str | None:
    """The sender's login in an IRC ``prefix`` (``nick!user@host``, ``nick@host`` or ``nick``), lower
    case; ``None`` for a server name (a prefix with a dot and neither ``!`` nor ``@``) or an empty nick."""
    nick_end = prefix.find("!")
    if nick_end < 0:
        nick_end = prefix.find("@")
    if nick_end < 0:
        nick_end = -1 if "." in prefix else len(prefix)  # a server name: no sender
    return prefix[:nick_end].lower() if nick_end > 0 else None


def parse_line(line: str, *, received_at: int, ingester: str | None = None) -> ChatEvent | None:
    """The chat event of one raw line (no CRLF); ``None`` for non-chat lines; :class:`MalformedLine`. This
    frames the line and finds its command, channel and text; :func:`_event` makes the event of them."""
    if line[-1:] == "\r":
        line = line[:-1]
    if not 0 < len(line) <= MAX_LINE_CHARS:
        if not line:
            raise MalformedLine("empty line")
        raise _too_long("line", line, MAX_LINE_CHARS)

    # -- framing: [@tags ][:prefix ]COMMAND[ params] ------------------------------------------
    if line[0] == "@":
        space = line.find(" ")
        if space < 0:
            raise MalformedLine("tag section with no command")
        tag_section: str | None = line[1:space]
        rest = line[space + 1 :]
        if rest[:1] == " ":
            rest = rest.lstrip(" ")
    else:
        tag_section = None
        rest = line
    if rest[:1] == ":":
        space = rest.find(" ")
        if space < 0:
            raise MalformedLine("prefix with no command")
        prefix: str | None = rest[1:space]
        rest = rest[space + 1 :]
        if rest[:1] == " ":
            rest = rest.lstrip(" ")
    else:
        prefix = None
    space = rest.find(" ")
    if space < 0:
        command, params = rest, ""
    else:
        command, params = rest[:space], rest[space + 1 :]
    if command not in CHAT_COMMANDS:
        if not command:
            raise MalformedLine("no command")
        command = command.upper()
        if command not in CHAT_COMMANDS:
            return None

    # -- parameters: the channel, then the text --------------------------------------------
    channel, sep, trailing = params.partition(" :")
    text: str | None = trailing if sep else None
    if not channel or " " in channel or channel[0] == ":":  # not the `#chan :text` shape: general rule
        channel, text = _general_params(command, params)
    if channel[:1] != "#":
        if command == "NOTICE":
            return None  # a notice to us or to `*`, not channel chat
        raise MalformedLine(f"{command} target {_short(channel)} is not a #channel")
    channel = channel[1:].lower()
    if not 0 < len(channel) <= MAX_LOGIN_CHARS:
        if not channel:
            raise MalformedLine(f"{command} to an empty channel name")
        raise _too_long("channel name", channel, MAX_LOGIN_CHARS)
    return _event(line, tag_section, prefix, command, channel, text, received_at, ingester)


def _general_params(command: str, params: str) -> tuple[str, str | None]:
    """``(channel, text)`` of chat parameters not in the ``#channel :text`` shape, by the general grammar
    (:func:`_split_params`): the first parameter, and the last when there are more; a
    :class:`MalformedLine` when there is none."""
    parts = _split_params(params)
    if not parts:
        raise MalformedLine(f"{command} without a channel parameter")
    return parts[0], parts[-1] if len(parts) > 1 else None


def _event(
    line: str,
    tag_section: str | None,
    prefix: str | None,
    command: str,
    channel: str,
    text: str | None,
    received_at: int,
    ingester: str | None,
) -> ChatEvent:
    """The event of a chat line that :func:`parse_line` has framed: its ids and server time from its tags,
    its sender, and a ``/me``'s text unwrapped; :class:`MalformedLine` for an id or login over its bound.
    One call, one value back: a tuple returned per line would cost more than the call."""
    # -- tags ----------------------------------------------------------------------------------
    tags = parse_tags(tag_section) if tag_section else {}  # at most MAX_TAGS: a tag takes 2 characters
    get = tags.get
    message_id = get("id") or get("msgid") or line_hash(line)
    channel_id = get("room-id") or None
    user_id = get("user-id") or None
    # one comparison for the usual case (a UUID and two ~10-digit ids: 56), each bound if it fails
    if len(message_id) + len(channel_id or "") + len(user_id or "") > MAX_ID_CHARS:
        _check_ids(message_id, channel_id, user_id)
    bad_sent_ts = None  # a server time not believed: the receive time is used, this keeps the server's
    stamp = get("tmi-sent-ts")
    # 13 ASCII digits, the first not 0: 2001-09-09 to 2286, so only the future needs a look
    if stamp and len(stamp) == 13 and stamp.isdigit() and stamp.isascii() and stamp[0] != "0":
        sent_at = int(stamp)
        if sent_at > received_at + MAX_SENT_AHEAD_MS:
            sent_at, bad_sent_ts = received_at, stamp
    elif stamp or "time" in tags:
        sent_at, bad_sent_ts = _other_sent_at(stamp, tags, received_at)
    else:
        sent_at = received_at

    # -- sender ---------------------------------------------------------------------------------
    user_login = get("login")
    if user_login:
        user_login = user_login.lower()
        if len(user_login) > MAX_LOGIN_CHARS:
            raise _too_long("login", user_login, MAX_LOGIN_CHARS)
    elif prefix:
        user_login = prefix_nick(prefix)
        # str.lower() at most doubles a length (U+0130), so a short prefix needs no len()
        if user_login is not None and len(prefix) > _HALF_LOGIN and len(user_login) > MAX_LOGIN_CHARS:
            raise _too_long("nick", user_login, MAX_LOGIN_CHARS)
    else:
        user_login = None

    # -- CTCP ACTION (/me); a one-character slice is a cached string: no copy for plain text ---------
    is_action = False
    if text is not None and text[:1] == "\x01" and command == "PRIVMSG":
        text, is_action = _action(text)

    return ChatEvent(
        message_id=message_id,
        kind=command,
        channel=channel,
        channel_id=channel_id,
        user_login=user_login,
        user_id=user_id,
        display_name=get("display-name") or None,
        text=text,
        is_action=is_action,
        sent_at=sent_at,
        received_at=received_at,
        tags=tags,
        raw=line,
        ingester=ingester,
        bad_sent_ts=bad_sent_ts,
    )


def _other_sent_at(stamp: str | None, tags: dict[str, str], received_at: int) -> tuple[int, str | None]:
    """``(sent_at, bad_sent_ts)`` of a line whose ``tmi-sent-ts`` (``stamp``) is missing or not 13 digits:
    such a ``stamp`` is not believed (the receive time, and the stamp kept); without one, the IRCv3
    ``time`` tag when it is a plausible time (else the receive time, and the tag kept), or the receive
    time."""
    if stamp:
        return received_at, stamp
    stamp = tags.get("time")
    if not stamp:
        return received_at, None
    iso_ms = _iso_to_ms(stamp)
    if iso_ms is not None and MIN_PLAUSIBLE_SENT_MS <= iso_ms <= received_at + MAX_SENT_AHEAD_MS:
        return iso_ms, None
    return received_at, stamp


def _action(text: str) -> tuple[str, bool]:
    """``(text, is_action)`` of a PRIVMSG's text that starts with ``\\x01``: a CTCP ACTION (``/me``) is its
    text without the ``\\x01ACTION`` wrapping; any other text is as it is."""
    if text[:7] != "\x01ACTION" or text[7:8] not in (" ", "\x01", ""):
        return text, False
    text = text[8:] if text[7:8] == " " else text[7:]
    return (text[:-1] if text[-1:] == "\x01" else text), True


def sender_of(line: str) -> tuple[str | None, str | None]:
    """``(user_login, user_id)`` of a line as :func:`parse_line` gives them, without parsing the rest of it
    (counting a range's events by sender reads every line): the ``login`` tag, else the nick of a
    ``nick!user@host`` prefix; the ``user-id`` tag. A line that is not a chat command of a ``#channel`` (no
    event) may still get a sender here."""
    tag_section, prefix, rest = _framed(line)
    if not rest:
        return None, None
    tags = parse_tags(tag_section) if tag_section else {}
    user_id = tags.get("user-id") or None
    login = tags.get("login")
    if login:
        return login.lower(), user_id
    return prefix_nick(prefix), user_id


def roomstate(line: str) -> tuple[str, str] | None:
    """``(channel login, room id)`` of a ROOMSTATE line (``@...;room-id=N;... :tmi.twitch.tv ROOMSTATE
    #ch``), which Twitch sends on every JOIN; None for any other line or one without a room id."""
    if not line.startswith("@"):
        return None
    tag_section, _, rest = line[1:].partition(" ")
    words = rest.split()
    if len(words) < 3 or words[1] != "ROOMSTATE" or not words[2].startswith("#"):
        return None
    room = parse_tags(tag_section).get("room-id")
    if not room:
        return None
    return words[2][1:].lower(), room


PrivmsgFields = tuple[str, dict[str, str], str, str | None, str | None, bool]
"""``(raw, tags, channel, user_login, text, is_action)`` of a PRIVMSG line, as :func:`parse_line`'s event has
them."""


def _past_spaces(line: str, at: int) -> int:
    while line.startswith(" ", at):
        at += 1
    return at


def _plain_privmsg(line: str) -> tuple[str, int, str, str | None, str | None, bool] | None:
    """``(raw, tags_end, channel, user_login, text, is_action)`` of a plain ``PRIVMSG #channel :text`` line
    as :func:`parse_line` gives them, its tags not read (``raw[1:tags_end]`` is the tag section, 0 without),
    so the sender is the prefix's nick: a ``login`` tag, which would name it, is the caller's to look for.
    ``None`` for a line that is not that shape (another command, no prefix, the general parameter shape, a
    bound crossed)."""
    if line[-1:] == "\r":
        line = line[:-1]
    if not 0 < len(line) <= MAX_LINE_CHARS:
        return None
    # positions, not slices: a slice of the rest of the line copies it (~0.1 us each); more spaces than
    # one between the parts are looked for only where one is not what follows
    tags_end = at = 0  # at: the prefix's ':'
    if line[0] == "@":
        tags_end = line.find(" ")
        if tags_end < 0:
            return None
        at = tags_end + 1
    if not line.startswith(":", at):
        at = _past_spaces(line, at)
        if not line.startswith(":", at):
            return None
    space = line.find(" ", at)
    if space < 0:
        return None
    prefix = line[at + 1 : space]
    at = space + 1
    if not line.startswith("PRIVMSG #", at):
        at = _past_spaces(line, at)
        if not line.startswith("PRIVMSG #", at):
            return None
    at += 9  # the channel's name
    space = line.find(" :", at)
    if space < 0:
        channel, text = line[at:], None
    else:
        channel, text = line[at:space], line[space + 2 :]
    if " " in channel:
        return None
    channel = channel.lower()
    if not 0 < len(channel) <= MAX_LOGIN_CHARS:
        return None
    user_login = prefix_nick(prefix)
    if user_login is not None and len(user_login) > MAX_LOGIN_CHARS:
        return None
    is_action = False
    if text is not None and text[:1] == "\x01":
        text, is_action = _action(text)
    return line, tags_end, channel, user_login, text, is_action


def privmsg_parts(line: str) -> tuple[str, str | None, str | None] | None:
    """``(channel, user_login, text)`` of a PRIVMSG line as :func:`parse_line` gives them, without parsing
    its tags (what a text log line shows: about a tenth of the work). ``None`` for any line this cannot
    tell without them or that is not a plain ``PRIVMSG #channel :text`` (another command, a ``login``
    tag, the general parameter shape, a bound crossed): parse those. Equal to :func:`parse_line`'s
    fields for every line that parses, but one whose ``id``, ``room-id`` or ``user-id`` tag is over its
    bound (a :class:`MalformedLine` there; the tags are not read here)."""
    parts = _plain_privmsg(line)
    if parts is None:
        return None
    line, tags_end = parts[0], parts[1]
    if line.startswith("login", 1) or line.find(";login", 1, tags_end) >= 0:  # maybe a `login` tag
        return None
    return parts[2], parts[3], parts[4]


def tag_section(line: str) -> str:
    """The tag section of a line: between its ``@`` and its first space ("" for a line without one)."""
    if line[:1] != "@":
        return ""
    end = line.find(" ")
    return line[1:end] if end > 1 else ""


def line_tags(line: str) -> dict[str, str]:
    """The tags of a line (its tag section, :func:`core.irc_tags.parse_tags`) as :func:`privmsg_fields` gives
    them: what a json answer of a chat message needs when its channel, sender and text are known already (a
    packed month's rows, :mod:`store.frame`)."""
    section = tag_section(line)
    return parse_tags(section) if section else {}


def privmsg_fields(line: str) -> PrivmsgFields | None:
    """:data:`PrivmsgFields` of a plain PRIVMSG line, equal to :func:`parse_line`'s event's, made without the
    rest of the parse (the event's ids, times and checks of other commands; what a json answer of a chat
    message shows). ``None`` wherever :func:`privmsg_parts` is, and for a line :func:`parse_line` rejects
    (an ``id``, ``room-id`` or ``user-id`` over its bound): parse those."""
    parts = _plain_privmsg(line)
    if parts is None:
        return None
    raw, tags_end, channel, user_login, text, is_action = parts
    tags = parse_tags(raw[1:tags_end]) if tags_end > 1 else {}
    get = tags.get
    if get("login"):  # the sender, not the prefix's nick
        return None
    message_id = get("id") or get("msgid") or ""  # else parse_line's hash of the line: always in bounds
    channel_id = get("room-id") or ""
    user_id = get("user-id") or ""
    if len(message_id) + len(channel_id) + len(user_id) > MAX_ID_CHARS:  # parse_line's test, then its bounds
        try:
            _check_ids(message_id, channel_id or None, user_id or None)
        except MalformedLine:
            return None
    return raw, tags, channel, user_login, text, is_action
