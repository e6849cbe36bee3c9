"""bench.storage_floor: the random values of a line counted at 16 bytes each, the rest compressed."""

from __future__ import annotations

import uuid

from schemas.packed_month import PackedRow, unpack_frame
from sink.pack import packed_frame

from bench.storage_floor import RANDOM_BYTES, Floor, floor_of, random_values
from store.stored_line import strip

T = 1_700_000_000_000
NONCE = "0123456789abcdef0123456789abcdef"


def _line(i: int, mid: str, *, nonce: bool, reply: bool) -> str:
    tags = f"badges=;color=#FF0000;display-name=Someone;id={mid};room-id=1;tmi-sent-ts={T + i};user-id=2"
    if nonce:
        tags = f"client-nonce={NONCE};{tags}"
    if reply:
        tags += f";reply-parent-msg-id={uuid.UUID(int=i + 1)}"
    return f"@{tags} :someone!someone@someone.tmi.twitch.tv PRIVMSG #chan :hello {i}"


def _frame(n: int, *, nonce: bool, reply: bool) -> bytes:
    rows: list[PackedRow] = []
    for i in range(n):
        mid = str(uuid.uuid4())
        rows.append((T + i, mid, strip(_line(i, mid, nonce=nonce, reply=reply), mid, T + i), T + i + 5))
    return packed_frame(rows)


def test_random_values_are_uuids_and_client_nonces() -> None:
    mid = str(uuid.uuid4())
    rest, found = random_values(_line(0, mid, nonce=True, reply=True))
    assert found == 3  # the id, the nonce, the reply's parent id
    assert mid not in rest and NONCE not in rest and "client-nonce=;" in rest
    assert random_values("@a=b :x PRIVMSG #c :0123456789abcdef0123456789abcdef") == (
        "@a=b :x PRIVMSG #c :0123456789abcdef0123456789abcdef",
        0,
    )  # 32 hex digits in a text are not a nonce


def test_each_line_counts_16_bytes_per_random_value_and_its_other_parts_compressed() -> None:
    plain, rich = Floor(), Floor()
    plain.add(unpack_frame(_frame(200, nonce=False, reply=False)))
    rich.add(unpack_frame(_frame(200, nonce=True, reply=True)))
    assert (plain.rows, plain.random) == (200, 200 * RANDOM_BYTES)  # the message ids
    assert rich.random == 200 * 3 * RANDOM_BYTES
    report = rich.report()
    assert report["random_values_b"] == 48.0
    assert 0 < report["texts_b"] < len("hello 199") and 0 < report["rest_b"] < 20
    parts = ("random_values_b", "texts_b", "rest_b", "send_times_b")
    assert abs(report["one_copy_b"] - sum(report[k] for k in parts)) < 0.3
    assert report["two_copies_b"] == round(2 * report["one_copy_b"], 1)


def test_a_value_that_is_not_a_frame_is_counted_not_read() -> None:
    report = floor_of([_frame(10, nonce=False, reply=False), b"not a frame"])
    assert (report["rows"], report["unreadable_frames"]) == (10, 1)
