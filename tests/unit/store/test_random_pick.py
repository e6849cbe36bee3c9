"""store/random_pick.py: every line about equally likely however the lines are bunched (issue 36:
40 draws over a user's 41 lines written within 4 s gave 2 distinct lines)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from store import random_pick


def _store(sizes: dict[str, int]) -> tuple[list[str], dict[str, list[str]]]:
    lines = {p: [f"{p}-{i}" for i in range(n)] for p, n in sizes.items()}
    return list(sizes), lines


def _draws(sizes: dict[str, int], n: int, *, seed: int = 36) -> Counter[str]:
    partitions, lines = _store(sizes)
    rng = random.Random(seed)

    async def count(p: str) -> int:
        return len(lines[p])

    async def nth(p: str, i: int) -> str | None:
        return lines[p][i] if i < len(lines[p]) else None

    async def main() -> Counter[str]:
        got: Counter[str] = Counter()
        for _ in range(n):
            line = await random_pick.pick(partitions, count, nth, lambda _s: True, rng=rng)
            assert line is not None
            got[line] += 1
        return got

    return asyncio.run(main())


def test_bunched_lines_are_each_about_equally_likely() -> None:
    # a lone line in one bucket, 41 in the next (written within 4 s): picking a bucket, then an instant,
    # gave the lone line half the time and the burst's first line nearly all the rest
    sizes = {"quiet": 1, "burst": 41, "later": 2}
    draws = 44 * 100
    got = _draws(sizes, draws)
    assert len(got) == 44  # every line came up
    expected = draws / 44
    assert all(0.6 * expected < n < 1.4 * expected for n in got.values()), got.most_common(3)


def test_more_partitions_than_the_sample_still_spread_over_the_lines() -> None:
    sizes = {f"b{i}": (50 if i % 10 == 0 else 1) for i in range(500)}  # 50 busy buckets among 450 quiet ones
    got = _draws(sizes, 1500)
    busy = sum(n for line, n in got.items() if int(line.split("-")[0][1:]) % 10 == 0)
    # uniform over lines: the busy buckets hold 2500 of 2950 lines (85 %); uniform over buckets: 10 %
    assert 0.75 < busy / 1500 < 0.95, busy
    assert len(got) > 700  # of 2950 lines in 1500 draws: uniform over lines reaches many


def test_lines_not_accepted_are_drawn_again_and_nothing_is_none() -> None:
    partitions, lines = _store({"a": 3})

    async def count(p: str) -> int:
        return len(lines[p])

    async def nth(p: str, i: int) -> str | None:
        return lines[p][i]

    async def main() -> tuple[str | None, str | None, str | None]:
        rng = random.Random(1)
        only = await random_pick.pick(partitions, count, nth, lambda s: s == "a-2", rng=rng)
        never = await random_pick.pick(partitions, count, nth, lambda s: False, rng=rng)
        empty = await random_pick.pick([], count, nth, lambda s: True, rng=rng)
        return only, never, empty

    assert asyncio.run(main()) == ("a-2", None, None)
