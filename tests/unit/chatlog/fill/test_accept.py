"""Which of a peer's lines a fill imports: the channel's chat lines in the time asked, through the
import's parser; the rest is counted."""

from __future__ import annotations

from chatlog.fill.accept import Accepting, Taken
from ingest.importer import ImportStats, import_lines
from schemas.chat_event import ChatEvent

T = 1_763_600_000_000  # in the window below


class Kept:
    """The import's sink as a list; it counts how often it is finished."""

    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.dead: list[bytes] = []
        self.finished = 0

    def event(self, event: ChatEvent) -> None:
        self.events.append(event)

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        del reason, source
        self.dead.append(raw)

    def finish(self, stats: ImportStats) -> None:
        del stats
        self.finished += 1


def privmsg(channel: str, at: int, text: str, room: str = "11") -> bytes:
    return (
        f"@id={channel}-{at}-{text};room-id={room};tmi-sent-ts={at};user-id=5 "
        f":bob!bob@bob.tmi.twitch.tv PRIVMSG #{channel} :{text}"
    ).encode()


def test_only_the_channels_lines_in_the_window_go_on_and_the_rest_is_counted() -> None:
    kept = Kept()
    accepting = Accepting(kept, "forsen", ((T, T + 60_000),))
    answer = [
        privmsg("forsen", T, "first"),
        privmsg("forsen", T + 59_999, "last"),
        privmsg("forsen", T - 1, "before"),
        privmsg("forsen", T + 60_000, "after"),
        privmsg("xqc", T + 5, "elsewhere", room="12"),
        b"<html><body>502 Bad Gateway</body></html>",
        b"PING :tmi.twitch.tv",
    ]

    stats = import_lines(answer, source="peer", sink=accepting, report=lambda _line: None)

    assert [e.text for e in kept.events] == ["first", "last"]
    assert accepting.taken == Taken(lines=2, other_channel=1, outside=2, not_irc=1)
    assert accepting.taken.dropped_text() == (
        "1 of another channel, 2 outside the time asked, 1 not an IRC chat line"
    )
    assert (
        kept.dead == [] and kept.finished == 0
    )  # garbage is the peer's, and the sink serves the next answer
    assert stats.events == 5


def test_a_renamed_channel_is_known_by_its_id_when_asked_by_id() -> None:
    kept = Kept()
    accepting = Accepting(kept, "newname", ((T, T + 1_000),), channel_id="11")

    import_lines([privmsg("oldname", T, "hi")], source="peer", sink=accepting, report=lambda _line: None)

    assert [e.channel for e in kept.events] == ["oldname"]
    by_login = Accepting(Kept(), "newname", ((T, T + 1_000),))
    import_lines([privmsg("oldname", T, "hi")], source="peer", sink=by_login, report=lambda _line: None)
    assert by_login.taken == Taken(other_channel=1)


def test_a_line_without_a_time_of_its_own_is_outside_the_time_asked() -> None:
    kept = Kept()
    accepting = Accepting(kept, "forsen", ((T, T + 1_000),))

    import_lines([b":bob!bob@h PRIVMSG #forsen :no time"], source="peer", sink=accepting, report=print)

    assert kept.events == [] and accepting.taken.outside == 1


def test_lines_in_any_of_several_windows_go_on_and_are_counted_per_window() -> None:
    kept = Kept()
    accepting = Accepting(kept, "forsen", ((T, T + 1_000), (T + 5_000, T + 9_000)))
    lines = [
        privmsg("forsen", at, str(at)) for at in (T, T + 999, T + 1_000, T + 5_000, T + 8_999, T + 9_000)
    ]

    import_lines(lines, source="peer", sink=accepting, report=lambda _line: None)

    assert [e.sent_at for e in kept.events] == [T, T + 999, T + 5_000, T + 8_999]
    assert accepting.per_window == [2, 2]
    assert accepting.taken == Taken(lines=4, outside=2)
