"""``chatlog status`` and ``chatlog channels``: counts and channel files are bounded, a wrong one is said in
one line before Kafka is asked (services are down), never read or allocated without end."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatlog.cli import ingest as ingest_cli
from core.errors import ChatlogError
from tests.unit.cli_runs import DOWN, chatlog


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--replicas", "99999999999"],
        ["status", "--replicas", "1001"],
        ["demo", "--channels", str(10**9)],
    ],
)
def test_a_count_past_its_maximum_is_a_usage_error_naming_the_option(args: list[str]) -> None:
    run = chatlog(args, DOWN, timeout=15)
    assert run.code == 2 and "Traceback" not in run.output
    assert f"Invalid value for '{args[1]}'" in run.stderr and "not reachable" not in run.stderr


@pytest.mark.parametrize("command", ["add", "remove"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/tmp"])
def test_a_channel_file_that_is_not_a_file_is_one_line_never_read(command: str, device: str) -> None:
    run = chatlog(["channels", command, "--file", device], DOWN, timeout=15)
    assert run.code == 2 and run.stderr_lines == [
        f"chatlog: error: --file {device} is not a regular file or a pipe ('-' reads stdin)"
    ]


def test_a_channel_file_past_the_limit_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_cli, "MAX_FILE_MIB", 1)
    big = tmp_path / "channels.txt"
    big.write_bytes(b"forsen\n" * (1024 * 1024 // 7 + 1))
    with pytest.raises(ChatlogError, match=r"^--file .*channels.txt holds more than 1 MiB of channel names$"):
        ingest_cli._names(None, big)
    big.write_bytes(b"forsen, xqc\n" * 1000)
    assert ingest_cli._names(["a"], big) == ["a", *["forsen", "xqc"] * 1000]
