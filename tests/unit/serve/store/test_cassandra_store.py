"""store.read's pure parts: the k-way merge of sorted row streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from hypothesis import given
from hypothesis import strategies as st

from store.read import _merge


async def _stream(items: Sequence[int], seen: list[int]) -> AsyncIterator[int]:
    for item in items:
        seen.append(item)
        yield item


def _merged(sources: Sequence[Sequence[int]]) -> tuple[list[tuple[int, int]], list[int]]:
    seen: list[int] = []

    async def run() -> list[tuple[int, int]]:
        return [pair async for pair in _merge([_stream(s, seen) for s in sources], lambda x: x)]

    return asyncio.run(run()), seen


@given(st.lists(st.lists(st.integers(-5, 5)).map(sorted), max_size=5))
def test_merge_is_a_stable_sort_of_the_sources(sources: list[list[int]]) -> None:
    merged, seen = _merged(sources)
    expected = sorted(((x, i) for i, s in enumerate(sources) for x in s), key=lambda p: p[0])
    assert [(i, x) for x, i in expected] == merged
    assert len(seen) == sum(map(len, sources))  # every source read to its end


def test_the_last_source_left_streams_on_without_keys() -> None:
    keyed: list[int] = []

    async def run() -> list[tuple[int, int]]:
        def key(x: int) -> int:
            keyed.append(x)
            return x

        return [pair async for pair in _merge([_stream([1, 5, 6, 7], []), _stream([2], [])], key)]

    assert asyncio.run(run()) == [(0, 1), (1, 2), (0, 5), (0, 6), (0, 7)]
    assert keyed == [1, 2, 5]  # 6 and 7 come after source 1 ran out: no key computed for them
