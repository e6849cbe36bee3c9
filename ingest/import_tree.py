"""Which files ``chatlog import PATH...`` reads, and in which order (nothing is read here but names).

* A file is read as named; a name ending in ``.gz`` is gunzipped while it is read. ``-`` is stdin.
* A directory is walked: every file under it whose name does not start with ``.``, in natural order
  (numbers in names compare as numbers: ``2024/2/9`` before ``2024/2/10``), so a tree is always read in
  the same order.
* A justlog tree is a directory under which justlog wrote (``filelog/channellog.go``, ``userlog.go``):

  - ``{channel_id}/{year}/{month}/{day}/channel.txt``: every PRIVMSG, USERNOTICE and CLEARCHAT of the
    channel that day, one raw IRC line a line as Twitch sent it (tags included), in arrival order;
  - ``{channel_id}/{year}/{month}/{user_id}.txt``: the same lines again, filed by sender (a timeout under
    its target, a gift sub under the gifter and again under the recipient);
  - justlog's archiver replaces each finished day (and each finished user month) by ``... .txt.gz``.

  Year, month and day are unpadded numbers. Every line of a user file is also in a channel file
  (justlog writes both from the same handler, with the same opt-out and flood rules), so a justlog tree
  is imported from its channel files alone: importing the user files too would store nothing more
  (rows are keyed by message id) but read every message twice. Rustlog's migrator from justlog reads
  the channel files only, for the same reason. A day holding both ``channel.txt`` and
  ``channel.txt.gz`` (the archiver stopped between writing the ``.gz`` and removing the ``.txt``) is read
  from ``channel.txt``, as justlog serves it: the ``.gz`` may be cut short.

  A directory is taken for a justlog tree when a ``channel.txt[.gz]`` lies under it at
  ``{year}/{month}/{day}/``; ``--justlog`` insists on it (a directory without one is an error) and
  ``--no-justlog`` reads every file, the user files too. Files are then read channel by channel, day by
  day. Any other file in a justlog tree is counted in the directory's note and not read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Final

from core.errors import ChatlogError
from core.times import day_start_ms

STDIN: Final = "-"
CHANNEL_FILE: Final = "channel.txt"
CHANNEL_FILE_GZ: Final = "channel.txt.gz"
_USER_FILE: Final = re.compile(r"[0-9]+\.txt(\.gz)?")
_DIGITS: Final = re.compile(r"(\d+)")


class PlanFailed(ChatlogError):
    """A named path cannot be imported at all (missing, or not what ``--justlog`` asks for)."""


@dataclass(frozen=True)
class ImportFile:
    """One file to read: ``path`` as reports name it (``-`` is stdin); ``gz`` to gunzip it."""

    path: str
    gz: bool = False


@dataclass
class ImportPlan:
    files: list[ImportFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """One line a directory: what is read from it and what is not."""
    problems: list[str] = field(default_factory=list)
    """One line a directory that could not be listed (its files are not read)."""


def natural_key(rel: Path) -> list[list[str | int]]:
    """Sort key of a relative path: part by part, digit runs compared as numbers (``9`` < ``10``)."""
    return [[int(c) if i % 2 else c for i, c in enumerate(_DIGITS.split(part))] for part in rel.parts]


def _number_in(name: str, low: int, high: int, digits: int | None = None) -> bool:
    return (
        name.isascii()
        and name.isdigit()
        and (digits is None or len(name) == digits)
        and low <= int(name) <= high
    )


def is_channel_file(path: Path) -> bool:
    """``.../{year}/{month}/{day}/channel.txt[.gz]`` (``path`` absolute, so parents above a walk count)."""
    parts = path.parts
    return (
        len(parts) >= 5
        and parts[-1] in (CHANNEL_FILE, CHANNEL_FILE_GZ)
        and _number_in(parts[-2], 1, 31)
        and _number_in(parts[-3], 1, 12)
        and _number_in(parts[-4], 1, 9999, digits=4)
    )


def channel_file_day_ms(path: Path) -> int | None:
    """Epoch ms of 00:00 UTC of a justlog channel file's day (its ``{year}/{month}/{day}``); None for any
    other path or a date that does not exist (``2024/2/31``)."""
    if not is_channel_file(path):
        return None
    year, month, day = (int(p) for p in path.parts[-4:-1])
    try:
        return day_start_ms(date(year, month, day))
    except ValueError:  # not a day of that month
        return None


def is_user_file(path: Path) -> bool:
    """``.../{year}/{month}/{user_id}.txt[.gz]``."""
    parts = path.parts
    return (
        len(parts) >= 4
        and _USER_FILE.fullmatch(parts[-1]) is not None
        and _number_in(parts[-2], 1, 12)
        and _number_in(parts[-3], 1, 9999, digits=4)
    )


def _walk(top: Path, problems: list[str]) -> list[Path]:
    """Every file under ``top`` not named ``.*``, in natural order, through links to directories (each
    directory once: a link back up is a problem, not a loop); unlistable directories to ``problems``."""

    def failed(exc: OSError) -> None:
        problems.append(f"cannot read {exc.filename}: {exc.strerror or exc}")

    found: list[Path] = []
    seen: set[tuple[int, int]] = set()  # the directories read, by device and inode: a link loop ends
    for root, dirs, names in os.walk(top, onerror=failed, followlinks=True):  # a linked day is read too
        try:
            info = os.stat(root)
        except OSError as exc:
            failed(exc)
            dirs[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:
            problems.append(f"{root}: skipped: a link to a directory already read")
            dirs[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for path in (Path(root, n) for n in names if not n.startswith(".")):
            if path.is_file():
                found.append(path)
            else:  # a FIFO would block the import, a device never end; a dangling link has nothing
                problems.append(f"{path}: skipped: not a regular file")
    return sorted(found, key=lambda p: natural_key(p.relative_to(top)))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _plan_directory(top: Path, justlog: bool | None, plan: ImportPlan) -> None:
    files = _walk(top, plan.problems)
    absolute = top.resolve()
    channel = [is_channel_file(absolute / p.relative_to(top)) for p in files]
    if justlog is None:
        justlog = any(channel)
    if not justlog:
        plan.files.extend(ImportFile(str(p), p.name.endswith(".gz")) for p in files)
        plan.notes.append(f"{top}: {_plural(len(files), 'file')}")
        return
    if not any(channel):
        layout = "{channel_id}/{year}/{month}/{day}/channel.txt[.gz]"
        raise PlanFailed(f"{top} is not a justlog tree: no {layout} under it")
    plain_days = {
        p.parent
        for p, is_channel in zip(files, channel, strict=True)
        if is_channel and p.name == CHANNEL_FILE
    }
    chosen: list[Path] = []
    users = beside = other = 0
    for p, is_channel in zip(files, channel, strict=True):
        if is_channel and p.name == CHANNEL_FILE_GZ and p.parent in plain_days:
            beside += 1
        elif is_channel:
            chosen.append(p)
        elif is_user_file(absolute / p.relative_to(top)):
            users += 1
        elif p.name in (CHANNEL_FILE, CHANNEL_FILE_GZ):  # a day's file where no day is: say which
            plan.problems.append(f"{p}: skipped: not under a {{year}}/{{month}}/{{day}} of the justlog tree")
        else:
            other += 1
    plan.files.extend(ImportFile(str(p), p.name == CHANNEL_FILE_GZ) for p in chosen)
    channels = len({p.parents[3] for p in chosen})
    ignored = [
        f"{_plural(users, 'user file')} (their lines are in the channel files)" if users else "",
        f"{beside} channel.txt.gz beside a channel.txt (read from the .txt)" if beside else "",
        _plural(other, "other file") if other else "",
    ]
    note = (
        f"{top}: justlog tree, {_plural(len(chosen), 'channel-day file')} in {_plural(channels, 'channel')}"
    )
    if any(ignored):
        note += "; not read: " + ", ".join(i for i in ignored if i)
    plan.notes.append(note)


def plan_import(paths: Sequence[str], *, justlog: bool | None = None) -> ImportPlan:
    """The files ``paths`` stand for, in reading order. ``justlog``: None detects justlog trees, True
    requires every directory to be one, False reads every file of a directory.

    Raises :class:`PlanFailed` for a path that does not exist, ``-`` named twice, or (``justlog=True``)
    a directory without a channel file; nothing has been read then."""
    plan = ImportPlan()
    if list(paths).count(STDIN) > 1:
        raise PlanFailed("'-' (stdin) can be named only once")
    for name in paths:
        if name == STDIN:
            plan.files.append(ImportFile(STDIN))
            continue
        if not name:
            raise PlanFailed("an empty path names no file (the working directory is '.')")
        path = Path(name)
        try:
            is_dir = path.is_dir()
            if not is_dir:
                path.stat()
        except OSError as exc:
            raise PlanFailed(f"cannot read {name}: {exc.strerror or exc}") from None
        if is_dir:
            _plan_directory(path, justlog, plan)
        else:
            plan.files.append(ImportFile(name, name.endswith(".gz")))
    return plan
