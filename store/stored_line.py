"""The raw IRC line as a block stores it: without the values the block's frame already holds.

A Twitch line carries its message id (``id=<uuid>``) and its send time (``tmi-sent-ts=<ms>``) as tags;
a frame (:mod:`store.frame`) holds exactly these two values of every line in columns of their own (the
16-byte uuid, the send time). So the stored line keeps the tag names but not those two values, and a
reader puts them back from the frame's columns (docs/storage.md).

The rule, applied to the tag section (``@...`` up to the first space) only, never to the text:

* the *first* tag element whose key is ``id`` (``id`` or ``id=...``) loses its value when that value is
  exactly ``str(message_id)``, and likewise the first ``tmi-sent-ts`` element when its value is exactly
  ``str(sent_at_ms)``: ``id=<uuid>`` becomes ``id=``. Any other value (an escaped one, another id, a
  number with leading zeros) stays, so the line keeps its own value and nothing is lost;
* :func:`restore` fills a first ``id=`` / ``tmi-sent-ts=`` element with the line's value;
* a line that would be ambiguous (its first ``id`` or ``tmi-sent-ts`` element already has an empty
  value, which restore would fill) or that begins with :data:`VERBATIM` is stored as ``VERBATIM + line``
  and given back as it is. Chat lines begin with ``@``, ``:`` or a command, so this costs nothing for
  real lines and makes ``restore(strip(x, m, t), m, t) == x`` hold for every string ``x``.

``message_id`` must be what the reader has: the text of the line's uuid (``str(message_uuid(...))``), so
a line whose id tag is not that uuid's canonical text (an upper-case uuid, a hashed id) is not stripped.
"""

from __future__ import annotations

import uuid
from typing import Final

__all__ = ["VERBATIM", "restore", "strip", "unmarked"]

VERBATIM: Final = "!"
"""First character of a stored line that is the original line after it, unchanged (never ``@``)."""

_ID: Final = "id"
_TS: Final = "tmi-sent-ts"
_ID_EMPTY: Final = len(_ID) + 1  # an element `id=`
_TS_EMPTY: Final = len(_TS) + 1
_ID_AFTER: Final = ";" + _ID  # an element of key `id` after the first (or of a key that starts so)
_TS_AFTER: Final = ";" + _TS
_KEYS: Final = (_ID, _TS)


def _element(line: str, end: int, key: str) -> tuple[int, int]:
    """Start and end in ``line`` of the first tag element (within ``line[1:end]``) whose key is ``key``
    (the element is ``key`` or ``key=...``); (-1, -1) if there is none."""
    n = len(key)
    at = 1
    if not (line.startswith(key, 1) and (n + 1 == end or line[n + 1] in "=;")):
        at = line.find(";" + key, 1, end)
        while at >= 0 and not (at + n + 1 == end or line[at + n + 1] in "=;"):
            at = line.find(";" + key, at + 1, end)
        if at < 0:
            return -1, -1
        at += 1
    stop = line.find(";", at, end)
    return at, end if stop < 0 else stop


def _tag_end(line: str) -> int:
    end = line.find(" ")
    return len(line) if end < 0 else end


def strip(raw: str, message_id: str | uuid.UUID, sent_at_ms: int) -> str:
    """``raw`` as stored in a row keyed by ``message_id`` and ``sent_at_ms`` (see the module doc)."""
    if raw[:1] != "@":
        return VERBATIM + raw if raw[:1] == VERBATIM else raw
    end = _tag_end(raw)
    cuts = []  # (start, stop) of each value to leave out
    for key, value in ((_ID, str(message_id)), (_TS, str(sent_at_ms))):
        at, stop = _element(raw, end, key)
        if at < 0 or not value:
            continue
        start = at + len(key) + 1
        if stop == start and raw[stop - 1] == "=":  # `key=`: restore would fill it in
            return VERBATIM + raw
        if stop - start == len(value) and raw[start - 1] == "=" and raw.startswith(value, start):
            cuts.append((start, stop))
    if not cuts:
        return raw
    if len(cuts) == 1:
        ((a, b),) = cuts
        return raw[:a] + raw[b:]
    (a, b), (c, d) = sorted(cuts)
    return raw[:a] + raw[b:c] + raw[d:]


def restore(stored: str, message_id: str | uuid.UUID, sent_at_ms: int) -> str:
    """The original line of a row's ``stored`` line, its ``message_id`` and ``sent_at_ms``."""
    first = stored[:1]
    if first != "@":
        return stored[1:] if first == VERBATIM else stored
    end = _tag_end(stored)
    # a Twitch line's: `;id=;` and `;tmi-sent-ts=;` inside the section, each the first element of its key
    # (the section does not start with either key): the positions the search below finds, by two finds
    i, t = stored.find(_ID_AFTER, 0, end), stored.find(_TS_AFTER, 0, end)
    if i > 0 and t > 0 and not stored.startswith(_KEYS, 1):
        i += len(_ID_AFTER) + 1  # where the value goes, if the element is `id=` and no more
        t += len(_TS_AFTER) + 1
        if stored.startswith("=;", i - 1) and stored.startswith("=;", t - 1):
            if i < t:
                return f"{stored[:i]}{message_id}{stored[i:t]}{sent_at_ms}{stored[t:]}"
            return f"{stored[:t]}{sent_at_ms}{stored[t:i]}{message_id}{stored[i:]}"
    at, id_stop = _element(stored, end, _ID)
    if at < 0 or id_stop - at != _ID_EMPTY:
        id_stop = -1
    at, ts_stop = _element(stored, end, _TS)
    if at < 0 or ts_stop - at != _TS_EMPTY:
        ts_stop = -1
    # the values are made only when they go back in (the text of a uuid costs about a microsecond)
    if id_stop < 0:
        if ts_stop < 0:
            return stored
        return f"{stored[:ts_stop]}{sent_at_ms}{stored[ts_stop:]}"
    if ts_stop < 0:
        return f"{stored[:id_stop]}{message_id}{stored[id_stop:]}"
    if id_stop < ts_stop:
        return f"{stored[:id_stop]}{message_id}{stored[id_stop:ts_stop]}{sent_at_ms}{stored[ts_stop:]}"
    return f"{stored[:ts_stop]}{sent_at_ms}{stored[ts_stop:id_stop]}{message_id}{stored[id_stop:]}"


def unmarked(stored: str) -> str:
    """A stored line's IRC text as the row holds it (its id and time may be left out of the tags), what is
    read without restoring the line: ``stored`` without its :data:`VERBATIM` mark."""
    return stored[1:] if stored[:1] == VERBATIM else stored
