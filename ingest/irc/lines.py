"""The read path: bytes from the socket → complete lines → protocol lines vs. lines for the caller.

It is the hot path of an ingester (≥ 100k lines/s per process, parse and produce included), so it
works on whole chunks: one ``rfind`` for the last line end, one ``decode``, one ``split``, and one
compiled regex scan over the decoded block to find the few protocol lines (PING, numerics, JOIN
echoes...). A chunk without protocol lines — nearly every chunk under load — never runs Python code
per line. Lines never come out split across reads: the unterminated tail waits for the next chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# Commands the pool looks at itself. Tags hold no space and the prefix holds no space, so the command
# is the first token after the optional ``@tags `` and ``:prefix ``. NOTICE is looked at (a Twitch
# channel suspension answers a JOIN) but still goes to the caller; see IrcConnection._handle.
PROTOCOL_COMMANDS = (
    "PING",
    "PONG",
    "CAP",
    "JOIN",
    "PART",
    "KICK",
    "NICK",
    "ERROR",
    "RECONNECT",
    "GLOBALUSERSTATE",
    "NOTICE",
)
_PROTOCOL_RE = re.compile(
    r"^(?:@[^ \r\n]* )?(?::[^ \r\n]+ )?(?:" + "|".join(PROTOCOL_COMMANDS) + r"|[0-9]{3})(?= |\r|$)",
    re.MULTILINE,
)
_BARE_LF_RE = re.compile(r"\r?\n")


class LineTooLong(Exception):
    """The server sent more than the allowed bytes without a line end."""


class LineSplitter:
    """Turns chunks of bytes into complete decoded lines (no CR LF, never empty)."""

    __slots__ = ("_tail", "decode_errors", "max_line_bytes")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self._tail = b""
        self.max_line_bytes = max_line_bytes
        self.decode_errors = 0

    @property
    def pending_bytes(self) -> int:
        return len(self._tail)

    def feed(self, data: bytes) -> str:
        """Add a chunk; return the complete lines read so far as one text block joined by CR LF.

        The block has no trailing line end and may be ``""``. Use :func:`split_lines` or
        :func:`route_lines` on it. Invalid UTF-8 is replaced (U+FFFD) and counted, the line is kept.
        """
        if self._tail:
            data = self._tail + data
        end = data.rfind(b"\n")
        if end < 0:
            if len(data) > self.max_line_bytes:
                raise LineTooLong(f"no line end in {len(data)} bytes")
            self._tail = data
            return ""
        self._tail = data[end + 1 :]
        block = data[: end - 1] if end and data[end - 1] == 13 else data[:end]
        try:
            text = block.decode()
        except UnicodeDecodeError:
            text = block.decode(errors="replace")
            self.decode_errors += 1
        # Servers end lines with CR LF; normalise the rare bare LF so everything below can rely on it.
        if text.count("\n") != text.count("\r\n"):
            text = "\r\n".join(_BARE_LF_RE.split(text))
        if text.startswith("\r\n") or "\r\n\r\n" in text or text.endswith("\r\n"):
            text = "\r\n".join(line for line in text.split("\r\n") if line)
        return text


def split_lines(text: str) -> list[str]:
    """All lines of a block from :meth:`LineSplitter.feed`."""
    return text.split("\r\n") if text else []


def route_lines(text: str, handle: Callable[[str], bool]) -> list[str]:
    """Split a block; give every protocol line to ``handle`` and return the others, in order.

    ``handle(line)`` returns True when it consumed the line, False to pass it on (another user's
    JOIN, a NOTICE). Only protocol lines are handled one by one in Python.
    """
    if not text:
        return []
    match = _PROTOCOL_RE.search(text)
    if match is None:
        return text.split("\r\n")
    out: list[str] = []
    pos = 0
    size = len(text)
    while match is not None:
        start = match.start()
        if start > pos:
            out.extend(text[pos : start - 2].split("\r\n"))
        end = text.find("\r\n", start)
        if end < 0:
            end = size
        line = text[start:end]
        if not handle(line):
            out.append(line)
        pos = end + 2
        match = _PROTOCOL_RE.search(text, pos) if pos < size else None
    if pos < size:
        out.extend(text[pos:].split("\r\n"))
    return out


@dataclass(frozen=True, slots=True)
class Message:
    """A protocol line taken apart (only used for the rare protocol lines, not for chat)."""

    tags: str
    prefix: str
    command: str
    params: tuple[str, ...]

    @property
    def nick(self) -> str:
        """The nick of the prefix (``nick!user@host``), or the whole prefix for a server."""
        return self.prefix.split("!", 1)[0]

    def tag(self, key: str) -> str | None:
        for item in self.tags.split(";") if self.tags else ():
            k, _, v = item.partition("=")
            if k == key:
                return v
        return None


def parse_message(line: str) -> Message:
    """Take an IRC line apart: ``[@tags] [:prefix] COMMAND params... [:trailing]``."""
    tags = prefix = ""
    rest = line
    if rest.startswith("@"):
        tags, _, rest = rest[1:].partition(" ")
    if rest.startswith(":"):
        prefix, _, rest = rest[1:].partition(" ")
    trailing: str | None = None
    if " :" in rest:
        rest, trailing = rest.split(" :", 1)
    elif rest.startswith(":"):
        rest, trailing = "", rest[1:]
    words = rest.split()
    command = words[0].upper() if words else ""
    params = words[1:]
    if trailing is not None:
        params.append(trailing)
    return Message(tags, prefix, command, tuple(params))


def channel_of(param: str) -> str:
    """``#Login`` → ``login`` (the form the pool keys channels by)."""
    return param.lstrip("#").lower()
