"""recent-messages2's export of a channel's newest events: raw IRC lines for a chat client joining it.

Read from robotty/recent-messages2 (``src/message_export.rs``, ``src/web/get_recent_messages.rs``), not
copied:

* Only PRIVMSG, CLEARCHAT, CLEARMSG, USERNOTICE, NOTICE and ROOMSTATE are exported; a NOTICE whose
  ``msg-id`` is one of :data:`IGNORED_NOTICE_IDS` is dropped.
* Events are taken oldest first. A CLEARMSG marks the earlier PRIVMSG/USERNOTICE whose ``id`` is its
  ``target-msg-id`` as deleted; a CLEARCHAT of a user marks that user's earlier PRIVMSG/USERNOTICE (by
  ``target-user-id`` = ``user-id``; by login when either id is missing, for plain IRC); a CLEARCHAT of the
  whole chat marks *every* earlier event, moderation events included. Only events in the answered window
  can be marked (recent-messages2 marks within what it returns too).
* Each line gets the tags ``historical=1``, ``rm-received-ts=<epoch ms received>`` and, when marked,
  ``rm-deleted=1`` (added after the line's own tags, replacing tags of the same name).
* ``hide_moderated_messages`` drops marked events; ``hide_moderation_messages`` drops CLEARCHAT and
  CLEARMSG; ``clearchat_to_notice`` writes a CLEARCHAT as
  ``@msg-id=rm-timeout :tmi.twitch.tv NOTICE #chan :bob has been timed out for 10m.`` (``rm-clearchat``:
  "Chat has been cleared by a moderator.", ``rm-permaban``: "bob has been permanently banned."), the
  duration written as Rust's ``humantime`` does (:func:`humantime`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from consent.rule import whose
from core.irc_parse import CHAT_COMMANDS, MODERATION_KINDS, USER_KINDS, with_tags
from schemas.chat_event import ChatEvent

EXPORTED_KINDS: Final = CHAT_COMMANDS | {"ROOMSTATE"}
IGNORED_NOTICE_IDS: Final = frozenset(
    {"no_permission", "host_on", "host_off", "host_target_went_offline", "msg_channel_suspended"}
)
_YEAR_S: Final = 31_557_600  # 365.25 days, as humantime counts a year
_MONTH_S: Final = 2_630_016  # 30.44 days, as humantime counts a month


@dataclass(frozen=True, slots=True)
class RecentOptions:
    """The query options of ``/api/v2/recent-messages/{login}`` that shape the lines."""

    hide_moderation_messages: bool = False
    hide_moderated_messages: bool = False
    clearchat_to_notice: bool = False


def exported(event: ChatEvent) -> bool:
    """Whether recent-messages2 would export an event of this kind at all."""
    if event.kind not in EXPORTED_KINDS:
        return False
    return not (event.kind == "NOTICE" and event.tags.get("msg-id", "") in IGNORED_NOTICE_IDS)


def humantime(seconds: int) -> str:
    """A duration as Rust's ``humantime::format_duration`` writes whole seconds: ``5m 2s``, ``1day 2h``."""
    if seconds <= 0:
        return "0s"
    years, rest = divmod(seconds, _YEAR_S)
    months, rest = divmod(rest, _MONTH_S)
    days, rest = divmod(rest, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    plural = [(years, "year"), (months, "month"), (days, "day")]
    parts = [f"{n}{unit}{'s' if n > 1 else ''}" for n, unit in plural if n]
    parts += [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return " ".join(parts)


def _message_id(event: ChatEvent) -> str:
    return event.tags.get("id") or event.message_id


def _hits(event: ChatEvent, clearchat: ChatEvent) -> bool:
    """Whether a CLEARCHAT of one user targets ``event``."""
    if event.kind not in USER_KINDS:
        return False
    target_id, target = whose(clearchat)
    if target_id and event.user_id:
        return event.user_id == target_id
    return bool(event.user_login) and event.user_login == (target or "").lower()


def deleted_flags(events: list[ChatEvent]) -> list[bool]:
    """For each of ``events`` (oldest first), whether a later moderation event in the list deletes it."""
    flags = [False] * len(events)
    index_by_id: dict[str, list[int]] = {}
    for i, event in enumerate(events):
        if event.kind == "CLEARMSG":
            for j in index_by_id.get(event.tags.get("target-msg-id", ""), ()):
                flags[j] = True
        elif event.kind == "CLEARCHAT":
            if not event.text:
                flags[:i] = [True] * i
            else:
                for j in range(i):
                    if not flags[j] and _hits(events[j], event):
                        flags[j] = True
        if event.kind in USER_KINDS:
            index_by_id.setdefault(_message_id(event), []).append(i)
    return flags


def _notice(event: ChatEvent) -> tuple[str, str] | None:
    """The ``(msg-id, text)`` of the NOTICE that ``clearchat_to_notice`` writes for a CLEARCHAT."""
    target = event.text or ""
    if not target:
        return "rm-clearchat", "Chat has been cleared by a moderator."
    duration = event.tags.get("ban-duration")
    if duration is None:
        return "rm-permaban", f"{target} has been permanently banned."
    if not duration.isdigit() or len(duration) > 12:
        return None  # not a duration recent-messages2 could read: the line is kept as it is
    return "rm-timeout", f"{target} has been timed out for {humantime(int(duration))}."


def export_line(event: ChatEvent, deleted: bool, options: RecentOptions) -> str | None:
    """The line exported for ``event`` (None: hidden by the options)."""
    if options.hide_moderated_messages and deleted:
        return None
    if options.hide_moderation_messages and event.kind in MODERATION_KINDS:
        return None
    extra = {"historical": "1", "rm-received-ts": str(event.received_at)}
    if deleted:
        extra["rm-deleted"] = "1"
    notice = _notice(event) if options.clearchat_to_notice and event.kind == "CLEARCHAT" else None
    if notice is not None:
        msg_id, text = notice
        return with_tags(f":tmi.twitch.tv NOTICE #{event.channel} :{text}", {"msg-id": msg_id, **extra})
    return with_tags(event.raw, extra)


def export_lines(events: Iterable[ChatEvent], options: RecentOptions) -> list[str]:
    """recent-messages2's ``messages`` for ``events`` (oldest first; those not exported are skipped)."""
    kept = [event for event in events if exported(event)]
    flags = deleted_flags(kept)
    lines = (export_line(event, flag, options) for event, flag in zip(kept, flags, strict=True))
    return [line for line in lines if line is not None]
