"""Text for a terminal or a log file: control characters made visible, so chat cannot drive the reader's
terminal (``chatlog logs --format text``).

A chat line is whatever its sender (or an IRC server, or an imported file) put in it: a ``\\r`` returns
to the start of the line and overwrites the timestamp, ANSI escapes (ESC ``[``...) move the cursor,
recolour or clear the screen, set the window title, and a ``\\n`` (Twitch tag values may hold an escaped
one) fakes a whole log line. Every such character becomes a visible escape, as Python writes it:
``\\r``, ``\\n``, ``\\t``, ``\\x1b``, ``\\x85``, ``\\u2028``. Escaped: C0 controls (U+0000-U+001F), DEL,
C1 controls (U+0080-U+009F), the line and paragraph separators (U+2028, U+2029) and the bidirectional
embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder what follows them.
Everything else, emoji joiners included, is left alone, and so is a backslash the sender typed: the text
format is for people; ``--format ndjson`` is the exact record.
"""

from __future__ import annotations

import re
from typing import Final

_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_CONTROLS: Final = [
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_TABLE: Final[dict[int, str]] = {
    c: _NAMED.get(chr(c)) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _CONTROLS
}
_FIND: Final = re.compile("[" + "".join(re.escape(chr(c)) for c in _CONTROLS) + "]")


def escape_controls(text: str) -> str:
    """``text`` with every control character (see the module doc) as a visible escape."""
    # the usual case: no copy. Every control is outside what str.isprintable() accepts (tested), and
    # that test is about twice as fast as the search, which only text it refuses needs
    if text.isprintable() or _FIND.search(text) is None:
        return text
    return text.translate(_TABLE)
