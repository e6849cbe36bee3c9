"""The chat event: the one contract every stage shares.

This class is the single source of truth. The JSON Schema in ``chat_event.schema.json`` is generated
from it (``chatlog schema export``; a unit test keeps the file in sync), the Spark schema is derived
from it in :mod:`schemas.spark`, and JSON validation is msgspec decoding into it.
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec


class ChatEvent(msgspec.Struct, kw_only=True, omit_defaults=False, forbid_unknown_fields=False):
    """One chat event as read from IRC (a line of PRIVMSG, USERNOTICE, CLEARCHAT, CLEARMSG, NOTICE...)."""

    message_id: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            description="Twitch `id` tag, else IRCv3 `msgid`, else a deterministic hash of the raw line.",
        ),
    ]
    kind: Annotated[str, msgspec.Meta(min_length=1, description="The IRC command: PRIVMSG, USERNOTICE, ...")]
    channel: Annotated[str, msgspec.Meta(min_length=1, description="Channel login, lower case, without `#`.")]
    channel_id: Annotated[str | None, msgspec.Meta(description="Twitch `room-id`.")] = None
    user_login: Annotated[
        str | None, msgspec.Meta(description="Sender's login (prefix nick or `login` tag).")
    ] = None
    user_id: Annotated[str | None, msgspec.Meta(description="Twitch `user-id`.")] = None
    display_name: Annotated[str | None, msgspec.Meta(description="`display-name` tag.")] = None
    text: Annotated[str | None, msgspec.Meta(description="Trailing parameter; CTCP ACTION unwrapped.")] = None
    is_action: Annotated[bool, msgspec.Meta(description="`/me` message.")] = False
    sent_at: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            description="Epoch ms from `tmi-sent-ts` or IRCv3 `time`; else the receive time.",
        ),
    ]
    received_at: Annotated[int, msgspec.Meta(ge=0, description="Epoch ms when the ingester read the line.")]
    tags: Annotated[dict[str, str], msgspec.Meta(description="Every IRCv3 tag, unescaped.")] = msgspec.field(
        default_factory=dict
    )
    raw: Annotated[str, msgspec.Meta(description="The line as received.")]
    ingester: Annotated[str | None, msgspec.Meta(description="Worker id that read it.")] = None


FIELD_NAMES: Final[tuple[str, ...]] = ChatEvent.__struct_fields__
REQUIRED_FIELDS: Final[tuple[str, ...]] = tuple(
    f.name for f in msgspec.structs.fields(ChatEvent) if f.required
)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ChatEvent)


def encode(event: ChatEvent) -> bytes:
    """The event as compact JSON bytes (the value written to ``chatlog.messages``)."""
    return _encoder.encode(event)


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
