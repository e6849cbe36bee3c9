"""The data set of ``chatlog bench vs-justlog``: one channel's days of chat as a justlog log tree, and the
URL lists that both servers are read with.

justlog (``filelog/``) keeps every line twice, under ``<logs>/<channel id>/<year>/<month>/``:
``<day>/channel.txt`` (the channel's day) and ``<user id>.txt`` (the user's month in that channel), years,
months and days written as plain numbers (``2024/3/7``). Its archiver gzips a day's files once the day
is over, and a user's month once the month is over (``<name>.txt.gz``, the ``.txt`` removed); it never
touches a file of a day whose day of the month is today's, nor one of the current month (of any year).
So the tree is written as ``.txt`` files of a past month (:func:`month_for`) on days that are not
today's day of the month (:func:`days_for`), and justlog's own archiver gzips all of them.

A **current** tree (``write_tree(..., now=...)``) ends now instead: the days of the current month up to
today (at most ``days``), today's lines up to a minute ago. justlog's archiver gzips its past days and
leaves today's file and the month's user files plain, which is how justlog serves a channel's current day
and a user's current month.

The lines are :func:`lab.bench.storage.privmsg` lines (Twitch PRIVMSGs with full tags, ~10 % replies, mean
~510 B) of ``users`` chatters: a group of regulars who each say about ``user_month_lines`` lines in the
month (the users whose month is read, so that there are enough of them for URL lists without repeats)
and the rest with Zipf-like weights (a few say much, most little).
"""

from __future__ import annotations

import itertools
import random
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Final

from lab.bench.storage import Chatter, chatter, privmsg

CHANNEL: Final = "benchvsjustlog"
CHANNEL_ID: Final = "700000001"
YEAR: Final = 2024
"""A past year: every file of the tree is one justlog's archiver gzips."""
SEED: Final = 20261127
_DAY_MS: Final = 86_400_000
CURRENT_DAY_READS: Final = 30
"""How often a current tree's URL lists hold today's day (both servers read it again each time; neither keeps
whole answers)."""
_LAST_LINE_AGO_MS: Final = 60_000
"""A current tree's last line was said this long before it was written."""
_REGULAR_SHARE: Final = 0.5
"""At most this share of the lines comes from the regulars."""


@dataclass(frozen=True)
class TreeParams:
    """How big the data set is (the defaults: a few minutes here; the issue's run is 30 x 50,000)."""

    days: int = 10
    lines_per_day: int = 20_000
    users: int = 2_000
    user_month_lines: int = 300
    """About how many lines each regular (a user whose month is read) says in the month."""
    seed: int = SEED

    @property
    def lines(self) -> int:
        return self.days * self.lines_per_day

    @property
    def regulars(self) -> int:
        """How many regulars: at most a quarter of the users, their lines at most half of the month's."""
        by_lines = int(self.lines * _REGULAR_SHARE / self.user_month_lines)
        return max(1, min(self.users // 4, by_lines))


def month_for(today: date) -> int:
    """The month of the data set: March (31 days), or May when it is March now (the archiver skips the
    current month's user files whatever their year)."""
    return 5 if today.month == 3 else 3


def days_for(count: int, today: date) -> list[int]:
    """``count`` days of a 31-day month, from the 1st, leaving out today's day of the month (the archiver
    skips the channel files of that day number in every month)."""
    if not 1 <= count <= 30:
        raise ValueError(f"days must be 1..30, got {count}")
    return [d for d in range(1, 32) if d != today.day][:count]


def channel_file(root: Path, channel_id: str, year: int, month: int, day: int) -> Path:
    """justlog's file of a channel's day (``.txt``; ``.txt.gz`` once archived)."""
    return root / channel_id / str(year) / str(month) / str(day) / "channel.txt"


def user_file(root: Path, channel_id: str, year: int, month: int, user_id: str) -> Path:
    """justlog's file of a user's month in a channel (``.txt``; ``.txt.gz`` once archived)."""
    return root / channel_id / str(year) / str(month) / f"{user_id}.txt"


def user_month_path(channel_id: str, user_id: str, year: int, month: int) -> str:
    """The URL path of a user's month, the same on justlog and chatlog."""
    return f"/channelid/{channel_id}/userid/{user_id}/{year}/{month}"


def channel_day_path(channel_id: str, year: int, month: int, day: int) -> str:
    """The URL path of a channel's day, the same on justlog and chatlog."""
    return f"/channelid/{channel_id}/{year}/{month}/{day}"


@dataclass(frozen=True)
class Url:
    """One request of a URL list and how many lines its answer has."""

    path: str
    lines: int


@dataclass
class Tree:
    """What was written: where, and how many lines each day and each user has."""

    root: Path
    year: int
    month: int
    days: list[int]
    channel_id: str = CHANNEL_ID
    day_lines: dict[int, int] = field(default_factory=dict)
    user_lines: Counter[str] = field(default_factory=Counter)
    regulars: list[str] = field(default_factory=list)
    """The regulars' user ids, in the order they were made."""
    raw_bytes: int = 0
    """Bytes of the lines (without their newlines)."""
    current: bool = False
    """The tree ends now: its last day is today, its month the current one."""

    @property
    def lines(self) -> int:
        return sum(self.day_lines.values())

    def files(self) -> list[Path]:
        """The ``.txt`` files justlog's archiver is to gzip: every one of a past tree; of a current one, the
        channel files of the days before today (never today's, nor the current month's user files)."""
        past = self.days[:-1] if self.current else self.days
        days = [channel_file(self.root, self.channel_id, self.year, self.month, d) for d in past]
        if self.current:
            return days
        users = [user_file(self.root, self.channel_id, self.year, self.month, u) for u in self.user_lines]
        return days + users

    def user_month_urls(self, json: bool = False, *, spread: float = 0.2) -> list[Url]:
        """The regulars whose month has ``user_month_lines`` ± ``spread`` lines, one URL each (no
        repeats), in a fixed shuffled order; ``?json`` answers with ``json``."""
        if not self.regulars:
            return []
        target = sum(self.user_lines[u] for u in self.regulars) / len(self.regulars)
        lo, hi = target * (1 - spread), target * (1 + spread)
        chosen = [u for u in self.regulars if lo <= self.user_lines[u] <= hi]
        random.Random(len(chosen)).shuffle(chosen)
        query = "?json" if json else ""
        return [
            Url(user_month_path(self.channel_id, u, self.year, self.month) + query, self.user_lines[u])
            for u in chosen
        ]

    def channel_day_urls(self, json: bool = False) -> list[Url]:
        """Every day of the tree, one URL each; of a current tree, today's day :data:`CURRENT_DAY_READS`
        times (the current day is one); ``?json`` answers with ``json``."""
        query = "?json" if json else ""
        days = [self.days[-1]] * CURRENT_DAY_READS if self.current else self.days
        return [
            Url(channel_day_path(self.channel_id, self.year, self.month, d) + query, self.day_lines[d])
            for d in days
        ]


def chatters(params: TreeParams, rng: random.Random) -> tuple[list[Chatter], list[float]]:
    """The channel's ``users`` chatters (distinct ids) and cumulative weights: the regulars first, each
    weighted for ``user_month_lines`` lines in the month, the rest Zipf-like (s = 0.9) over what is left."""
    users: list[Chatter] = []
    seen: set[str] = set()
    while len(users) < params.users:
        one = chatter(rng)
        if one.user_id not in seen:
            seen.add(one.user_id)
            users.append(one)
    regular = params.user_month_lines / params.lines
    rest = 1.0 - regular * params.regulars
    others = [1 / (rank + 1) ** 0.9 for rank in range(params.users - params.regulars)]
    scale = rest / sum(others) if others else 0.0
    weights = [regular] * params.regulars + [w * scale for w in others]
    return users, list(itertools.accumulate(weights))


def day_lines(
    params: TreeParams,
    day_ms: int,
    users: Sequence[Chatter],
    cum: Sequence[float],
    rng: random.Random,
    span_ms: int = _DAY_MS,
) -> Iterator[tuple[Chatter, str]]:
    """One day's ``lines_per_day`` lines in time order over its first ``span_ms``, each with who said it."""
    n = params.lines_per_day
    step = span_ms / n
    jitter = max(0, min(999, int(step) - 1))
    parent: str | None = None
    for i in range(n):
        user = rng.choices(users, cum_weights=cum)[0]
        ts = day_ms + int(i * step) + rng.randint(0, jitter)
        line = privmsg(rng, user, CHANNEL, CHANNEL_ID, ts, parent if rng.random() < 0.1 else None)
        parent = f"{user.login}\t{user.user_id}\t{line.split(' :', 2)[-1][:120]}"
        yield user, line


def current_days(count: int, today: date) -> list[int]:
    """The last ``count`` days of the current month up to ``today`` (fewer early in a month)."""
    if not 1 <= count <= 30:
        raise ValueError(f"days must be 1..30, got {count}")
    return list(range(max(1, today.day - count + 1), today.day + 1))


def write_tree(
    root: Path, params: TreeParams, today: date | None = None, *, now: datetime | None = None
) -> Tree:
    """The justlog tree of ``params`` under ``root`` (uncompressed: justlog's archiver gzips it): of a past
    month, or, with ``now``, a current tree ending a minute before ``now``. A tree already there (a run
    before, in the same ``--work``) is removed first: user files are appended to."""
    shutil.rmtree(root, ignore_errors=True)
    today = now.date() if now is not None else today or datetime.now(UTC).date()
    rng = random.Random(params.seed)
    users, cum = chatters(params, rng)
    if now is None:
        tree = Tree(root, YEAR, month_for(today), days_for(params.days, today))
    else:
        tree = Tree(root, today.year, today.month, current_days(params.days, today), current=True)
    tree.regulars = [u.user_id for u in users[: params.regulars]]
    for day in tree.days:
        day_ms = int(datetime(tree.year, tree.month, day, tzinfo=UTC).timestamp() * 1000)
        span_ms = _DAY_MS
        if now is not None and day == today.day:
            span_ms = int(now.timestamp() * 1000) - _LAST_LINE_AGO_MS - day_ms
            if span_ms < _LAST_LINE_AGO_MS:
                raise ValueError("a current tree needs a few minutes of today (UTC): try again later")
        by_user: defaultdict[str, list[str]] = defaultdict(list)
        path = channel_file(root, tree.channel_id, tree.year, tree.month, day)
        path.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        with path.open("w", encoding="utf-8", newline="\n") as out:
            for user, line in day_lines(params, day_ms, users, cum, rng, span_ms):
                out.write(line + "\n")
                by_user[user.user_id].append(line)
                tree.raw_bytes += len(line.encode())
                count += 1
        tree.day_lines[day] = count
        for user_id, lines in by_user.items():
            with user_file(root, tree.channel_id, tree.year, tree.month, user_id).open(
                "a", encoding="utf-8", newline="\n"
            ) as out:
                out.write("\n".join(lines) + "\n")
            tree.user_lines[user_id] += len(lines)
    return tree


def tree_bytes(root: Path) -> int:
    """Bytes of every file under ``root`` (what the tree takes on disk, as file sizes)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
