"""`chatlog channels add/remove/list` against the real Kafka (fresh topics per test)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.compacted import fold, read_to_end
from core.settings import StackSettings
from ingest.registry import Registry
from lab.demo.supervisor import CHATLOG

pytestmark = pytest.mark.integration


def _chatlog(
    settings: StackSettings, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "CHATLOG_TOPIC_CHANNELS": settings.topic_channels,
        "CHATLOG_IRC_FLAVOR": "twitch",
    }
    return subprocess.run(
        [*CHATLOG, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _records(settings: StackSettings) -> list[tuple[bytes | None, bytes | None]]:
    return list(read_to_end(settings, settings.topic_channels))


def test_add_list_remove_and_no_op_re_add(fresh_topics: StackSettings, tmp_path: Path) -> None:
    s = fresh_topics
    added = _chatlog(s, "channels", "add", "#Alpha", "beta", "alpha")
    assert added.returncode == 0, added.stderr
    assert "added 2 channel(s); 0 already registered" in added.stdout
    names = tmp_path / "names.txt"
    names.write_text("beta\n#gamma, delta\n\n")
    again = _chatlog(s, "channels", "add", "--file", str(names))
    assert "added 2 channel(s); 1 already registered" in again.stdout
    assert len(_records(s)) == 4  # re-adding beta wrote nothing
    removed = _chatlog(s, "channels", "remove", "beta", "nosuch")
    assert "removed 1 channel(s); 1 were not registered" in removed.stdout
    listed = _chatlog(s, "channels", "list")
    assert listed.stdout.split() == ["alpha", "delta", "gamma"]
    records = _records(s)
    assert (b"beta", None) in records  # a tombstone, in beta's bucket
    assert sorted(fold(records)) == [b"alpha", b"delta", b"gamma"]
    stdin_add = _chatlog(s, "channels", "add", "--file", "-", stdin="beta epsilon")
    assert "added 2 channel(s)" in stdin_add.stdout
    assert _chatlog(s, "channels", "list", "--count").stdout.strip() == "5"


def test_a_bad_name_is_one_line_and_writes_nothing(fresh_topics: StackSettings) -> None:
    s = fresh_topics
    done = _chatlog(s, "channels", "add", "good", "not-twitch", "fine")
    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()[-1:]
    assert (
        line.startswith("chatlog: error: invalid channel name 'not-twitch'") and "nothing was changed" in line
    )
    assert "Traceback" not in done.stderr
    assert _records(s) == []


def test_bulk_add_of_many_names_lands_each_once_in_its_bucket(fresh_topics: StackSettings) -> None:
    s = fresh_topics
    names = [f"bulk_{i}" for i in range(20_000)]
    registry = Registry(s, flavor="twitch")
    assert len(registry.add(names).changed) == 20_000
    change = registry.add([*names[:10], "bulk_new"])
    assert change.changed == ["bulk_new"] and len(change.unchanged) == 10
    assert set(registry.channels()) == {*names, "bulk_new"}
