"""The read path: bytes from the socket → complete lines → protocol lines vs. lines for the caller.

It is the hot path of an ingester (every line of every channel goes through it; ``chatlog bench irc``
measures its rate, ``chatlog bench ingest`` that of the whole process), so it works on whole chunks: one
``rfind`` for the last line end, one ``split`` of the bytes, a ``map`` of ``bytes.decode`` (per line:
ASCII lines stay compact, a single emoji does not widen the whole chunk), then one tight loop that finds
each line's command (:func:`core.irc_parse.route_by_command`) and only parses the rare protocol lines
(PING, numerics, JOIN echoes...). Lines never come out split across reads: the unterminated tail waits.
"""

from __future__ import annotations

from collections.abc import Callable

from core.irc_parse import route_by_command

# Commands the pool looks at itself. Tags hold no space and the prefix holds no space, so the command
# is the first token after the optional ``@tags `` and ``:prefix ``. NOTICE is looked at (a Twitch
# channel suspension answers a JOIN) but still goes to the caller; see IrcConnection._handle.
PROTOCOL_COMMANDS = frozenset(
    {"PING", "PONG", "CAP", "JOIN", "PART", "KICK", "NICK", "ERROR", "RECONNECT", "GLOBALUSERSTATE", "NOTICE"}
)


class LineSplitter:
    """Turns chunks of bytes into complete decoded lines (no CR LF, never empty).

    Memory is bounded by ``max_line_bytes`` whatever the server sends: a line longer than that is
    discarded, counted in ``lines_too_long``, and never held whole. Once the unterminated tail passes
    the bound, the splitter drops bytes until the next ``\n`` (a 1 GB line costs one chunk at a time);
    a complete line past the bound inside one chunk is dropped too. The lines around it are kept, and
    so is the connection. (The parser's own, smaller bound, the contract's, dead-letters the lines in
    between with the reason.)
    """

    __slots__ = ("_discarding", "_tail", "decode_errors", "lines_too_long", "max_line_bytes")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self._tail = b""
        self._discarding = False
        self.max_line_bytes = max_line_bytes
        self.decode_errors = 0
        self.lines_too_long = 0

    @property
    def pending_bytes(self) -> int:
        return len(self._tail)

    def _drop_tail(self) -> None:
        self._tail = b""
        self._discarding = True
        self.lines_too_long += 1

    def feed(self, data: bytes) -> list[str]:
        """Add a chunk; return the lines it completed. Invalid UTF-8 is replaced (U+FFFD) and counted
        in ``decode_errors`` (chunks); the line itself is kept."""
        if self._discarding:  # inside a line that is too long: skip to its end
            start = data.find(b"\n")
            if start < 0:
                return []
            self._discarding = False
            data = data[start + 1 :]
        elif self._tail:
            data = self._tail + data
        end = data.rfind(b"\n")
        limit = self.max_line_bytes
        if len(data) - end > limit + 2:  # the unterminated tail (CR LF to come) is already too long
            self._drop_tail()
            if end < 0:
                return []
        else:
            self._tail = data[end + 1 :]
            if end < 0:
                return []
        block = data[: end - 1] if end and data[end - 1] == 13 else data[:end]
        parts = block.split(b"\r\n")
        if len(parts) != block.count(b"\n") + 1:  # a server ending lines with a bare LF
            parts = [p.removesuffix(b"\r") for p in block.split(b"\n")]
        if len(block) > limit:  # rare: a chunk that may hold a complete line past the bound
            kept = [p for p in parts if len(p) <= limit]
            self.lines_too_long += len(parts) - len(kept)
            parts = kept
        if b"" in parts:
            parts = [p for p in parts if p]
        try:
            return list(map(bytes.decode, parts))
        except UnicodeDecodeError:
            self.decode_errors += 1
            return [p.decode(errors="replace") for p in parts]


def route_lines(
    lines: list[str], handle: Callable[[str], bool], counts: dict[str, int] | None = None
) -> list[str]:
    """Give every protocol line (a command of :data:`PROTOCOL_COMMANDS`, a numeric reply) to ``handle``
    and return the others, in order, counting them per channel in ``counts``
    (:func:`core.irc_parse.route_by_command`). ``handle(line)`` returns True when it consumed the line,
    False to pass it on (another user's JOIN, a NOTICE); it takes the line apart with
    :func:`core.irc_parse.parse_message`."""
    return route_by_command(lines, PROTOCOL_COMMANDS, handle, counts)
