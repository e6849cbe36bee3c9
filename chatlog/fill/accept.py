"""Which of a peer's lines a fill takes: the chat events of the channel in the time asked (pure logic).

:class:`Accepting` stands in front of ``chatlog import``'s sink (:class:`ingest.importer.EventSink`): the
import's parser reads the peer's answer, and only the events that belong go on to the messages topic. The
rest is counted, never imported: a line of another channel, a line outside the time asked (justlog answers
a whole day), and what is not an IRC chat line (a peer's error page) -- the last is the peer's garbage,
not a line chatlog saw, so it is counted here rather than sent to the dead-letter topic.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.importer import EventSink, ImportStats
from schemas.chat_event import ChatEvent


@dataclass
class Taken:
    """What became of the chat events and problems of one answer."""

    lines: int = 0
    other_channel: int = 0
    outside: int = 0
    not_irc: int = 0

    @property
    def dropped(self) -> int:
        return self.other_channel + self.outside + self.not_irc

    def dropped_text(self) -> str:
        """``3 of another channel, 120 outside the time asked`` (the counts not zero), or ``""``."""
        parts = [
            (self.other_channel, "of another channel"),
            (self.outside, "outside the time asked"),
            (self.not_irc, "not an IRC chat line"),
        ]
        return ", ".join(f"{n} {what}" for n, what in parts if n)


class Accepting:
    """An :class:`EventSink` passing on to ``sink`` the events of ``channel`` within one of ``windows``
    (``[lo, hi)`` epoch ms, in order); it never finishes ``sink``: one sink serves every answer of a fill.
    ``per_window``: the lines taken in each window."""

    def __init__(
        self,
        sink: EventSink,
        channel: str,
        windows: tuple[tuple[int, int], ...],
        channel_id: str | None = None,
    ) -> None:
        self._sink = sink
        self._channel = channel
        self._channel_id = channel_id
        self._windows = windows
        self._first = windows[0] if windows else (0, 0)
        self.taken = Taken()
        self.per_window = [0] * len(windows)

    def event(self, event: ChatEvent) -> None:
        # on every line's path: the channel's login, else its id when one is given (a renamed channel);
        # the first window (a whole day, mostly) before the others
        if event.channel != self._channel and (
            self._channel_id is None or event.channel_id != self._channel_id
        ):
            self.taken.other_channel += 1
            return
        at = event.sent_at
        lo, hi = self._first
        i = 0 if lo <= at < hi else self._window_of(at)
        if i < 0:
            self.taken.outside += 1
            return
        self.taken.lines += 1
        self.per_window[i] += 1
        self._sink.event(event)

    def _window_of(self, at: int) -> int:
        """The index of the window holding ``at``, or -1."""
        for i, (lo, hi) in enumerate(self._windows):
            if lo <= at < hi:
                return i
        return -1

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        del raw, reason, source
        self.taken.not_irc += 1

    def finish(self, stats: ImportStats) -> None:
        del stats
