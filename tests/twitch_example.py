"""The PRIVMSG of Twitch's IRC documentation (ronni in #ronni, user and room id 1337) as a chat event: the
sample the chat event contract and the parser are both checked against."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from schemas.chat_event import ChatEvent

RONNI_PRIVMSG: Final = ChatEvent(
    message_id="b34ccfc7-4977-403a-8a94-33c6bac34fb8",
    kind="PRIVMSG",
    channel="ronni",
    channel_id="1337",
    user_login="ronni",
    user_id="1337",
    display_name="ronni",
    text="Kappa Keepo",
    is_action=False,
    sent_at=1507246572675,
    received_at=1507246572700,
    tags={"id": "b34ccfc7-4977-403a-8a94-33c6bac34fb8", "display-name": "ronni"},
    raw="@id=b34c :ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #ronni :Kappa Keepo",
    ingester="w1",
)


def ronni_privmsg(**changes: Any) -> ChatEvent:
    """:data:`RONNI_PRIVMSG` with ``changes`` (field names and values, not checked)."""
    return msgspec.structs.replace(RONNI_PRIVMSG, **changes)
