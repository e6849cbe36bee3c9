"""One line picked at random, every line about equally likely, however the lines are bunched in time.

A store keeps lines in partitions (a channel's 5-minute buckets, a user's half-days). Picking a random
partition and then a random *instant* in it favours the lines after a quiet stretch (41 lines written
within 4 s: the first one wins almost every time). Here a partition is picked in proportion to the lines it
holds, then a line of it by its position:

* a channel or user with at most :data:`SAMPLE` partitions: each is counted, so every line is equally
  likely (exactly, up to the random generator);
* with more, :data:`SAMPLE` partitions picked uniformly are counted and the line is uniform over their
  lines: every line about equally likely (the counts of a random sample of partitions stand in for all of
  them), and a pick costs :data:`SAMPLE` counts however long the history is;
* a line the caller does not accept (a deletion, a ban: ``/random`` returns what a user said) is drawn
  again, up to :data:`TRIES` times, which keeps the pick uniform over the accepted lines.

The store supplies three things: how many lines a partition holds, the line at a position of a
partition, and which lines it accepts (:func:`pick`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

P = TypeVar("P")
L = TypeVar("L")

SAMPLE: Final = 64
"""Partitions counted for one pick at most."""
TRIES: Final = 16
"""Draws before a pick gives up on finding a line it accepts."""
CONCURRENT_COUNTS: Final = 16


async def pick(
    partitions: Sequence[P],
    count: Callable[[P], Awaitable[int]],
    nth: Callable[[P, int], Awaitable[L | None]],
    accept: Callable[[L], bool],
    *,
    rng: random.Random | None = None,
) -> L | None:
    """A line of ``partitions`` picked at random, every line (that ``accept`` takes) about equally likely;
    None when there is none or :data:`TRIES` draws found none it accepts. ``count(p)``: the lines of
    ``p``; ``nth(p, i)``: its ``i``-th line (0-based, in any fixed order), None if it holds fewer."""
    rng = rng or random.Random()
    chosen = list(partitions) if len(partitions) <= SAMPLE else rng.sample(list(partitions), SAMPLE)
    gate = asyncio.Semaphore(CONCURRENT_COUNTS)

    async def counted(partition: P) -> int:
        async with gate:
            return max(await count(partition), 0)

    counts = await asyncio.gather(*(counted(p) for p in chosen))
    total = sum(counts)
    for _ in range(TRIES if total else 0):
        index = rng.randrange(total)
        for partition, n in zip(chosen, counts, strict=True):
            if index < n:
                line = await nth(partition, index)
                if line is not None and accept(line):
                    return line
                break
            index -= n
    return None
