"""The chat event: the one contract every stage shares.

This class is the single source of truth. The JSON Schema in ``chat_event.schema.json`` is generated
from it (``chatlog schema export``; a unit test keeps the file in sync), the Spark schema is derived
from it in :mod:`schemas.spark`, and JSON validation is msgspec decoding into it.

Every field is bounded here, once (the sink validates every record against these bounds, the ingesters
and the importer never produce an event outside them, and what is outside goes to the dead-letter topic
with the reason). Lengths count characters (code points), so a string's UTF-8 form is at most 4 times
its bound:

* ``raw`` (and so ``text``, every tag key and value): :data:`MAX_LINE_CHARS`, 16,384. A Twitch line is
  under 8 KiB with its tags (IRCv3 allows 8,191 bytes of tags plus 512 for the message); twice that
  leaves room for any server without letting one record fill a Cassandra batch.
* ``channel`` and ``user_login``: :data:`MAX_LOGIN_CHARS`, 200. Twitch logins have at most 25
  characters, but IRC channel names may be longer (RFC 2812: 50; servers configure more). They are
  Cassandra partition-key columns (limit 64 KiB), so the bound keeps every key far below it. No
  character set is imposed: an IRC server may allow ``-`` or non-ASCII in channel names.
* ``channel_id``, ``user_id``: :data:`MAX_ID_CHARS`, 64 (Twitch ids are decimal numbers of ~10 digits;
  the keyspace is being re-keyed by them). ``message_id``: :data:`MAX_MESSAGE_ID_CHARS`, 128 (a UUID
  is 36, the line hash 32, IRCv3 ``msgid`` values are short tokens). ``kind``: 32 (an IRC command).
  ``ingester``: 128.
* ``tags``: at most :data:`MAX_TAGS` (8,192) entries, which the line's bound implies; Twitch sends
  ~15-35.
* ``sent_at`` and ``received_at``: epoch ms from 0 (1970) to :data:`MAX_TIME_MS`
  (9999-12-31T23:59:59.999Z), the range that Cassandra's ``timestamp`` stores *and* that
  cassandra-driver (Python's ``datetime``) can read back.

``tags`` holds the line's own tags, nothing else (clients show them as the line's). When the line's
``tmi-sent-ts`` (or IRCv3 ``time``) is not a plausible time (not a number, negative, before
:data:`MIN_PLAUSIBLE_SENT_MS`, more than :data:`MAX_SENT_AHEAD_MS` after the receive time), ``sent_at``
is the receive time, the line is kept, and chatlog's note of it is the field ``bad_sent_ts``: the
server's value as it was (None when the server's time was used, or there was none).
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

MAX_LINE_CHARS: Final = 16_384
"""Longest ``raw`` line, and so ``text`` and every tag key and value."""
MAX_LOGIN_CHARS: Final = 200
"""Longest ``channel`` and ``user_login`` (Cassandra partition-key columns)."""
MAX_ID_CHARS: Final = 64
"""Longest ``channel_id`` and ``user_id``."""
MAX_MESSAGE_ID_CHARS: Final = 128
MAX_KIND_CHARS: Final = 32
MAX_INGESTER_CHARS: Final = 128
MAX_TAGS: Final = MAX_LINE_CHARS // 2
"""Most entries of ``tags``: a tag takes at least two characters of the line (a key and a ``;``), so the
line's bound implies it."""
MAX_TIME_MS: Final = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last epoch ms cassandra-driver can read back as a ``datetime``."""
MIN_PLAUSIBLE_SENT_MS: Final = 1_000_000_000_000
"""2001-09-09T01:46:40Z, the first epoch ms of 13 digits: a server time before it is not believed (the
receive time is used). Twitch's chat is from 2011."""
MAX_SENT_AHEAD_MS: Final = 86_400_000
"""A server time more than a day after the receive time is not believed."""

_Line = Annotated[str, msgspec.Meta(max_length=MAX_LINE_CHARS)]
_Login = Annotated[str, msgspec.Meta(max_length=MAX_LOGIN_CHARS)]
_Id = Annotated[str, msgspec.Meta(max_length=MAX_ID_CHARS)]


class ChatEvent(msgspec.Struct, kw_only=True, omit_defaults=False, forbid_unknown_fields=False):
    """One chat event as read from IRC (a line of PRIVMSG, USERNOTICE, CLEARCHAT, CLEARMSG, NOTICE...)."""

    message_id: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_MESSAGE_ID_CHARS,
            description="Twitch `id` tag, else IRCv3 `msgid`, else a deterministic hash of the raw line.",
        ),
    ]
    kind: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=MAX_KIND_CHARS, description="The IRC command: PRIVMSG, USERNOTICE, ..."
        ),
    ]
    channel: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=MAX_LOGIN_CHARS, description="Channel login, lower case, without `#`."
        ),
    ]
    channel_id: Annotated[_Id | None, msgspec.Meta(description="Twitch `room-id`.")] = None
    user_login: Annotated[
        _Login | None, msgspec.Meta(description="Sender's login (prefix nick or `login` tag).")
    ] = None
    user_id: Annotated[_Id | None, msgspec.Meta(description="Twitch `user-id`.")] = None
    display_name: Annotated[_Line | None, msgspec.Meta(description="`display-name` tag.")] = None
    text: Annotated[_Line | None, msgspec.Meta(description="Trailing parameter; CTCP ACTION unwrapped.")] = (
        None
    )
    is_action: Annotated[bool, msgspec.Meta(description="`/me` message.")] = False
    sent_at: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            le=MAX_TIME_MS,
            description="Epoch ms from `tmi-sent-ts` or IRCv3 `time`; the receive time when there is none "
            "or it is not plausible (then `bad_sent_ts` holds the server's value).",
        ),
    ]
    received_at: Annotated[
        int, msgspec.Meta(ge=0, le=MAX_TIME_MS, description="Epoch ms when the ingester read the line.")
    ]
    tags: Annotated[
        dict[_Line, _Line],
        msgspec.Meta(
            max_length=MAX_TAGS,
            description="Every IRCv3 tag of the line, unescaped; nothing else.",
        ),
    ] = msgspec.field(default_factory=dict)
    raw: Annotated[str, msgspec.Meta(max_length=MAX_LINE_CHARS, description="The line as received.")]
    ingester: Annotated[
        Annotated[str, msgspec.Meta(max_length=MAX_INGESTER_CHARS)] | None,
        msgspec.Meta(description="Worker id that read it."),
    ] = None
    bad_sent_ts: Annotated[
        _Line | None,
        msgspec.Meta(
            description="The server's `tmi-sent-ts` or `time` when it was not plausible and `sent_at` is "
            "the receive time instead; chatlog's note, not a tag of the line."
        ),
    ] = None


FIELD_NAMES: Final[tuple[str, ...]] = ChatEvent.__struct_fields__
REQUIRED_FIELDS: Final[tuple[str, ...]] = tuple(
    f.name for f in msgspec.structs.fields(ChatEvent) if f.required
)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ChatEvent)


def encode(event: ChatEvent) -> bytes:
    """The event as compact JSON bytes (the value written to ``chatlog.messages``)."""
    return _encoder.encode(event)


_ID_HEAD: Final = b'{"message_id":"'


def peek_message_id(data: bytes) -> str | None:
    """The ``message_id`` of an event as :func:`encode` writes it (its first field), read without decoding
    the rest; None for anything else (another producer's field order, an id with an escape in it). A reader
    that drops copies by id asks this first, and decodes only the first copy."""
    if not data.startswith(_ID_HEAD):
        return None
    end = data.find(b'"', len(_ID_HEAD))
    if end < 0:
        return None
    raw = data[len(_ID_HEAD) : end]
    if b"\\" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def decode(data: bytes | str) -> ChatEvent:
    """Parse and validate one JSON chat event; raises :class:`InvalidEvent` with the reason."""
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise InvalidEvent(str(exc)) from exc
    except msgspec.DecodeError as exc:
        raise InvalidEvent(f"not JSON: {exc}") from exc


def json_schema() -> dict[str, object]:
    """The JSON Schema of the chat event, derived from :class:`ChatEvent`."""
    schema: dict[str, object] = msgspec.json.schema(ChatEvent)
    return schema


class InvalidEvent(ValueError):
    """A record that is not a valid chat event; the message says why."""
