"""`chatlog init` moves a keyspace written by the previous release (commit cfc39dd: the row layout, with
packed user-months and rows written after packing) to the current layout: as many lines after as rows
before, and the API's answers byte for byte the same before and after.

The keyspace is written and read by the previous release's own code (its tree from git, run in a subprocess
on this environment): its sink writer, its ``chatlog pack``, its ``chatlog serve`` app. Skipped where the
commit is not in the clone (a shallow one)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import StackSettings
from core.testing import chat_events
from lab.bench.scratch import drop_keyspaces
from schemas.chat_event import encode
from tests.uvicorn_thread import served

pytestmark = pytest.mark.integration

PREVIOUS = "cfc39ddab445c8f914fb771c5469bdc9910a9ac2"
ROOT = Path(__file__).resolve().parents[3]
DAY = 86_400_000
NO_TAIL = {"CHATLOG_SERVE_FRESH": "false"}  # the stored lines only: no Kafka tail read on either side

OLD_SIDE = r"""
import base64, json, subprocess, sys
from pathlib import Path

import httpx

from core.cql import apply_schema, connect
from core.settings import StackSettings
from schemas.chat_event import decode
from serve.api.app import create_app
from serve.settings import ServeSettings
from sink.settings import SinkSettings
from sink.writer.cassandra import close_sessions
from sink.writer.partition import write_partition
from tests.uvicorn_thread import served

keyspace, work = sys.argv[1], Path(sys.argv[2])
stack = StackSettings(cassandra_keyspace=keyspace)
apply_schema(stack)
sink = SinkSettings(cassandra_keyspace=keyspace, sink_metrics_port=0, sink_checkpoint=str(work / "cp"))


def write(name):
    lines = (work / name).read_bytes().splitlines()
    stats = write_partition(((line, None, None) for line in lines), sink)
    close_sessions()
    assert stats.events == len(lines), (stats.events, len(lines))


write("before_pack.jsonl")
subprocess.run(
    [sys.executable, "-c", "from chatlog.cli.main import main; main()", "pack", "--settle-minutes", "0",
     "--keyspace", keyspace],
    check=True, capture_output=True,
)
write("after_pack.jsonl")
cluster, session = connect(stack, keyspace=keyspace)
rows = {t: session.execute(f"SELECT count(*) FROM {t}").one()[0] for t in ("chat_by_channel", "chat_by_user")}
cluster.shutdown()
answers = {}
with served(create_app(ServeSettings(cassandra_keyspace=keyspace, serve_channels_ttl_s=0))) as base:
    for url in json.loads((work / "urls.json").read_text()):
        got = httpx.get(base + url, timeout=60)
        answers[url] = [got.status_code, base64.b64encode(got.content).decode()]
(work / "old.json").write_text(json.dumps({"rows": rows, "answers": answers}))
"""


def _previous_tree(to: Path) -> bool:
    try:
        subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"], check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", PREVIOUS], check=True, capture_output=True)
    to.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(to)], input=archive.stdout, check=True)
    return True


def _urls(events: list[Any]) -> list[str]:
    """Every kind of read of the logs: channel days and user months (text, json, reversed, raw), lists."""
    from core.times import naive_utc

    urls = []
    for e in events:
        at = naive_utc(e.sent_at)
        day = f"/channel/{e.channel}/{at.year}/{at.month}/{at.day}"
        urls += [day, f"{day}?json=1", f"{day}?reverse=1", f"{day}?raw=1"]
        if e.user_login:
            month = f"/channel/{e.channel}/user/{e.user_login}/{at.year}/{at.month}"
            urls += [month, f"{month}?json=1", f"{month}?reverse=1"]
            urls += [f"/list?channel={e.channel}&user={e.user_login}"]
        urls += [f"/list?channel={e.channel}", f"/channelid/{e.channel_id}/{at.year}/{at.month}/{at.day}"]
    return sorted(set(urls))


@pytest.fixture
def old_keyspace(stack: StackSettings, tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    old = tmp_path / "previous"
    if not _previous_tree(old):
        pytest.skip(f"the previous release's commit {PREVIOUS[:7]} is not in this clone")
    keyspace = f"m{uuid.uuid4().hex[:10]}"
    now = int(__import__("time").time() * 1000)
    past = chat_events(600, channels=3, now_ms=now - 62 * DAY, id_prefix="p")  # a month chatlog pack closes
    late = chat_events(40, channels=3, now_ms=now - 62 * DAY + 60_000, id_prefix="l")  # rows after packing
    today = chat_events(300, channels=3, now_ms=now - 60_000, id_prefix="t")
    (tmp_path / "before_pack.jsonl").write_bytes(b"\n".join(encode(e) for e in past + today))
    (tmp_path / "after_pack.jsonl").write_bytes(b"\n".join(encode(e) for e in late))
    urls = _urls(past + late + today)
    (tmp_path / "urls.json").write_text(json.dumps(urls))
    env = {**os.environ, "PYTHONPATH": str(old), "CHATLOG_CASSANDRA_KEYSPACE": keyspace, **NO_TAIL}
    script = tmp_path / "old_side.py"
    script.write_text(OLD_SIDE)
    done = subprocess.run(
        [sys.executable, str(script), keyspace, str(tmp_path)],
        cwd=old,
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    try:
        yield keyspace, tmp_path, urls
    finally:
        drop_keyspaces(stack, [keyspace])


def test_init_moves_a_keyspace_of_the_previous_release_and_every_answer_stays_the_same(
    stack: StackSettings, old_keyspace: tuple[str, Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.cql import connect
    from serve.api.app import create_app, open_store
    from serve.settings import ServeSettings
    from store.scan import stored_ids
    from store.schema import LayoutMismatch

    keyspace, work, urls = old_keyspace
    for name, value in NO_TAIL.items():
        monkeypatch.setenv(name, value)
    old = json.loads((work / "old.json").read_text())
    assert old["rows"]["chat_by_channel"] > 0  # rows the pack left (today's and the late ones)
    env = {**os.environ, "CHATLOG_CASSANDRA_KEYSPACE": keyspace}
    chatlog = Path(sys.executable).parent / "chatlog"

    serve_values: dict[str, Any] = {"cassandra_keyspace": keyspace, "serve_channels_ttl_s": 0}
    with pytest.raises(LayoutMismatch, match=r"^keyspace .*layout 1.*chatlog init"):  # refused until moved
        open_store(ServeSettings(**serve_values))

    moved = subprocess.run(
        [str(chatlog), "init", "--no-topics"], env=env, capture_output=True, text=True, check=False
    )
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "Traceback" not in moved.stderr

    cluster, session = connect(stack)
    try:
        channel_ids = stored_ids(session, keyspace, "channel")
        user_ids = stored_ids(session, keyspace, "user")
    finally:
        cluster.shutdown()
    assert len(channel_ids) == len(set(channel_ids)) == 600 + 40 + 300
    assert len(user_ids) == len(set(user_ids))

    with served(create_app(ServeSettings(**serve_values))) as base:
        for url in urls:
            got = httpx.get(base + url, timeout=60)
            status, body = old["answers"][url]
            assert (url, got.status_code) == (url, status)
            assert got.content == base64.b64decode(body), url

    again = subprocess.run(
        [str(chatlog), "init", "--no-topics"], env=env, capture_output=True, text=True, check=False
    )
    assert again.returncode == 0, again.stdout + again.stderr
