"""recent-messages2's export rules: which events, which marks, which tags, the NOTICE texts."""

from __future__ import annotations

from schemas.chat_event import ChatEvent
from serve.recent import RecentOptions, deleted_flags, export_lines, humantime


def _event(i: int, kind: str, user: str | None, text: str, tags: dict[str, str], raw: str = "") -> ChatEvent:
    return ChatEvent(
        message_id=f"h{i}", kind=kind, channel="c", user_login=user, user_id=tags.get("user-id"), text=text,
        sent_at=1000 + i, received_at=2000 + i, tags=tags, raw=raw or f":x {kind} #c :{text}",
    )  # fmt: skip


def test_humantime_writes_durations_as_rusts_humantime() -> None:
    assert [humantime(s) for s in (0, 1, 60, 302, 3600, 86_400, 172_800, 1_209_600)] == [
        "0s", "1s", "1m", "5m 2s", "1h", "1day", "2days", "14days",
    ]  # fmt: skip
    assert humantime(2_630_016 + 3_661) == "1month 1h 1m 1s"
    assert humantime(2 * 31_557_600) == "2years"


def test_clearchat_of_a_user_marks_only_that_users_earlier_messages() -> None:
    events = [
        _event(0, "PRIVMSG", "bob", "a", {"user-id": "1"}),
        _event(1, "PRIVMSG", "ann", "b", {"user-id": "2"}),
        _event(2, "USERNOTICE", "bob", "c", {"user-id": "1"}),
        _event(3, "CLEARCHAT", None, "bob", {"target-user-id": "1"}),
        _event(4, "PRIVMSG", "bob", "d", {"user-id": "1"}),
        _event(5, "PRIVMSG", "ann", "e", {}),
        _event(6, "CLEARCHAT", None, "ann", {}),  # no ids: by login
    ]
    assert deleted_flags(events) == [True, True, True, False, False, True, False]


def test_clearmsg_marks_its_target_and_a_cleared_chat_marks_everything_before() -> None:
    events = [
        _event(0, "PRIVMSG", "bob", "a", {"id": "x"}),
        _event(1, "PRIVMSG", "bob", "b", {"id": "y"}),
        _event(2, "CLEARMSG", "bob", "a", {"target-msg-id": "x"}),
        _event(3, "NOTICE", None, "slow", {"msg-id": "slow_on"}),
        _event(4, "CLEARCHAT", None, "", {}),
        _event(5, "PRIVMSG", "bob", "c", {"id": "z"}),
    ]
    assert deleted_flags(events) == [True, True, True, True, False, False]
    assert deleted_flags(events[:3]) == [True, False, False]


def test_tags_are_added_to_lines_with_and_without_tags() -> None:
    tagged = _event(0, "PRIVMSG", "bob", "hi", {"id": "x"}, raw="@id=x;historical=0 :bob PRIVMSG #c :hi")
    bare = _event(1, "PRIVMSG", "bob", "yo", {}, raw=":bob PRIVMSG #c :yo")
    ignored = _event(2, "NOTICE", None, "hosting", {"msg-id": "host_on"})
    other = _event(3, "JOIN", "bob", "", {})
    assert export_lines([tagged, bare, ignored, other], RecentOptions()) == [
        "@id=x;historical=1;rm-received-ts=2000 :bob PRIVMSG #c :hi",
        "@historical=1;rm-received-ts=2001 :bob PRIVMSG #c :yo",
    ]


def test_clearchat_to_notice() -> None:
    ban = _event(0, "CLEARCHAT", None, "bob", {})
    odd = _event(
        1, "CLEARCHAT", None, "bob", {"ban-duration": "soon"}, raw="@ban-duration=soon :t CLEARCHAT #c :bob"
    )
    lines = export_lines([ban, odd], RecentOptions(clearchat_to_notice=True))
    assert lines == [
        "@msg-id=rm-permaban;historical=1;rm-received-ts=2000 "
        ":tmi.twitch.tv NOTICE #c :bob has been permanently banned.",
        "@ban-duration=soon;historical=1;rm-received-ts=2001 :t CLEARCHAT #c :bob",
    ]
