"""The throughput data of ``chatlog bench sink``: copies placed as a second replica's arrive."""

from __future__ import annotations

import random

from lab.bench.sink import COPY_DELAY_RECORDS, with_copies


def test_each_copy_follows_its_first_copy_within_the_delay() -> None:
    values = list(range(20_000))
    produced = with_copies(values, random.Random(3), 0.1)
    first: dict[int, int] = {}
    copies = 0
    for position, value in enumerate(produced):
        if value in first:
            copies += 1
            # its slot is at most COPY_DELAY_RECORDS on; the other copies placed in between add ~10 %
            assert 0 < position - first[value] <= 2 * COPY_DELAY_RECORDS
        else:
            first[value] = position
    assert sorted(set(produced)) == values
    assert 1_800 <= copies <= 2_200  # ~10 %


def test_a_share_of_one_sends_every_message_twice() -> None:
    values = list(range(5_000))
    produced = with_copies(values, random.Random(3), 1.0)
    assert len(produced) == 2 * len(values)
    assert all(produced.count(v) == 2 for v in values[:200])
