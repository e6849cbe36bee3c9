"""Consent in ``chatlog serve`` over a real socket: uvicorn on a free port, the keyspace written by the sink's
executor, the opt-out registry on its own topic. The admin API (401 without or with a wrong key, 200 with
one), 403 for opted-out users and channels, ``/channels`` without opted-out channels, lifts, the audit
(ids, never text), and the self-service code."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from consent.registry import OptOutRegistry
from consent.settings import ConsentSettings
from core.settings import StackSettings
from serve.api.app import create_app
from serve.settings import ServeSettings
from store.blocks import CHANNEL
from store.write import BLOCK_TABLES
from tests.integration.consent.filled_keyspace import Filled, fill
from tests.integration.consent.optout_topic import optout_topic
from tests.uvicorn_thread import served as uvicorn_served

pytestmark = pytest.mark.integration

SECRET = "s3cret-admin-key-0123456789"
ADMIN = {"Authorization": f"Bearer {SECRET}"}
CHANNEL_BLOCKS = BLOCK_TABLES[CHANNEL]
"""What an erasure's report calls the lines it deleted from channels' days."""


@dataclass(frozen=True)
class Served:
    base: str
    filled: Filled
    consent: ConsentSettings

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(self.base + path, timeout=60, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.post(self.base + path, timeout=120, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.delete(self.base + path, timeout=60, **kw)


@pytest.fixture(scope="module")
def served(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module (its setup is most of the time): the tests use distinct ids, in order."""
    from lab.bench.scratch import drop_keyspaces
    from store.schema import apply_schema

    unique = uuid.uuid4().hex[:10]
    keyspace = stack.model_copy(update={"cassandra_keyspace": f"t{unique}"})
    apply_schema(keyspace)
    filled = fill(keyspace.cassandra_keyspace, tmp_path_factory.mktemp("sink"))
    try:
        with optout_topic(stack, f"t{unique}.optout", serve_admin_keys=f"ops:{SECRET}") as consent:
            values: dict[str, Any] = {
                "cassandra_keyspace": keyspace.cassandra_keyspace,
                "serve_channels_ttl_s": 0,
            }
            with uvicorn_served(create_app(ServeSettings(**values), consent=consent)) as base:
                yield Served(base, filled, consent)
    finally:
        drop_keyspaces(keyspace, [keyspace.cassandra_keyspace])


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> float:
    """Seconds until ``check()`` held (fails after ``timeout``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "not within the time allowed"
        time.sleep(0.1)
    return time.monotonic() - started


def channel_names(s: Served) -> set[str]:
    return {c["name"] for c in s.get("/channels").json()["channels"]}


def test_admin_routes_need_a_key(served: Served) -> None:
    body = {"kind": "user", "id": "1007"}
    assert served.post("/admin/optout", json=body).status_code == 401
    wrong = served.post("/admin/optout", json=body, headers={"Authorization": "Bearer nope-nope-nope-nope"})
    assert wrong.status_code == 401 and wrong.json()["message"] == "wrong admin key"
    assert served.get("/admin/optout", headers={"X-Api-Key": SECRET[:-1]}).status_code == 401
    assert served.delete("/admin/optout/user/1007").status_code == 401
    assert served.post("/admin/erase", json={"user_id": "1007"}).status_code == 401
    shape = served.post("/admin/optout", json={"kind": "team"})  # the key first: no hint of a valid body
    assert (shape.status_code, shape.json()["message"]) == (401, "an admin key is required "
        "(Authorization: Bearer <key>, or X-Api-Key)")  # fmt: skip
    never = served.delete("/admin/optout/user/1009", headers=ADMIN)  # not opted out: nothing published
    assert (never.status_code, never.json()["message"]) == (404, "user 1009 has not opted out")
    assert served.get("/admin/optout", headers={"X-Api-Key": SECRET}).json() == {"optouts": []}  # first test
    assert served.get("/channel/chan1/user/user7/2026/9").status_code == 200  # nothing changed


def test_a_channel_opt_out_is_hidden_and_403_until_lifted(served: Served) -> None:
    assert channel_names(served) == {"chan0", "chan1", "chan2"}
    assert served.get("/channel/chan2/2026/9/21").status_code == 200
    added = served.post(
        "/admin/optout", json={"kind": "channel", "id": "502", "keep_history": True}, headers=ADMIN
    )
    assert added.status_code == 200, added.text
    assert added.json()["optout"]["by"] == "api:ops" and added.json()["erased"] is None
    eventually(lambda: channel_names(served) == {"chan0", "chan1"})
    for path in ("/channel/chan2/2026/9/21", "/channelid/502/2026/9/21", "/channel/chan2/user/user1/2026/9"):
        answer = served.get(path)
        assert answer.status_code == 403, path
        assert answer.json()["error"] == "user or channel has opted out"
    live = served.get("/api/live/chan2")  # its new lines are not followed either
    assert live.status_code == 403 and live.json()["error"] == "user or channel has opted out"
    lifted = served.delete("/admin/optout/channel/502", headers=ADMIN)
    assert lifted.status_code == 200, lifted.text
    eventually(lambda: served.get("/channel/chan2/2026/9/21").status_code == 200)
    assert channel_names(served) == {"chan0", "chan1", "chan2"}


def test_a_user_opt_out_erases_or_hides_their_lines_and_the_audit_has_ids_only(served: Served) -> None:
    day = served.get("/channel/chan1/2026/9/21").text
    assert "user7:" in day and "user5:" in day
    erased = served.post(
        "/admin/optout", json={"kind": "user", "id": "1005", "reason": "asked"}, headers=ADMIN
    )
    assert erased.status_code == 200, erased.text
    assert erased.json()["erased"]["rows"][CHANNEL_BLOCKS] > 0
    kept = served.post(
        "/admin/optout",
        json={"kind": "user", "id": "1007", "keep_history": True},
        headers={"X-Api-Key": SECRET},
    )
    assert kept.status_code == 200, kept.text
    eventually(lambda: served.get("/channel/chan1/user/user7/2026/9").status_code == 403)
    assert served.get("/channel/chan1/userid/1005/2026/9").status_code == 403
    assert served.get("/channel/chan1/userid/1007/2026/9").status_code == 403
    assert served.get("/api/live/chan1?user=user7").status_code == 403
    # erased: no name row is left to tell user5's id (403 while the store's name cache still has it)
    assert served.get("/channel/chan1/user/user5/2026/9").status_code in (403, 404)
    assert served.get("/namehistory/1007").status_code == 403
    day = served.get("/channel/chan1/2026/9/21").text
    assert "user7:" not in day and "user5:" not in day and "user8:" in day

    assert served.delete("/admin/optout/user/1007", headers=ADMIN).status_code == 200
    eventually(lambda: served.get("/channel/chan1/user/user7/2026/9").status_code == 200)
    assert served.get("/channel/chan1/userid/1005/2026/9").status_code == 403  # still opted out

    listed = served.get("/admin/optout", headers=ADMIN).json()["optouts"]
    assert [(o["kind"], o["id"], o["reason"]) for o in listed] == [("user", "1005", "asked")]  # 502 lifted
    every = served.get("/admin/optout?audit=1", headers=ADMIN).json()["audit"]
    entries = [e for e in every if e["id"] in ("1005", "1007")]
    assert [(e["action"], e["id"]) for e in entries] == [
        ("lift", "1007"),
        ("optout", "1007"),
        ("erase", "1005"),
        ("optout", "1005"),
    ]
    assert {e["by"] for e in entries} == {"api:ops"}
    text = str(entries)
    assert "message " not in text and "run " not in text


def test_self_service_code_is_published(served: Served) -> None:
    answer = served.post("/optout?details=1")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    code = body["code"]
    assert len(code) == 8 and body["command"] == f"!chatlog optout {code}"
    assert body["expires_at"] > time.time() * 1000 + 60_000
    registry = OptOutRegistry(served.consent, served.consent.topic_optout)
    try:
        registry.wait_ready(20)
        found = registry.code(code)
        assert found is not None and found.expires_at == body["expires_at"]
    finally:
        registry.close()
    bare = served.post("/optout").json()  # justlog's and rustlog's answer: the code alone
    assert isinstance(bare, str) and bare != code
    entries = served.get("/admin/optout?audit=1", headers=ADMIN).json()["audit"]
    codes = [(e["kind"], e["id"], e["by"]) for e in entries if e["action"] == "code"]
    assert ("code", code, "api:self-service") in codes and ("code", bare, "api:self-service") in codes


def test_admin_erase_and_bad_input(served: Served) -> None:
    erased = served.post("/admin/erase", json={"channel_id": "501"}, headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert erased.json()["erased"]["rows"][CHANNEL_BLOCKS] > 0
    assert served.get("/channel/chan1/2026/9/21").status_code == 404
    assert served.post("/admin/erase", json={}, headers=ADMIN).status_code == 400
    assert served.post("/admin/erase", json={"user_id": "x1"}, headers=ADMIN).status_code == 400
    assert served.post("/admin/optout", json={"kind": "team", "id": "1"}, headers=ADMIN).status_code == 400
    assert served.delete("/admin/optout/user/abc", headers=ADMIN).status_code == 400


def test_preflight_says_in_one_line_why_consent_cannot_be_enforced(served: Served) -> None:
    from core.errors import ChatlogError
    from serve.consent import preflight

    preflight(served.consent)  # the topic is there
    with pytest.raises(ChatlogError, match="does not exist in Kafka"):
        preflight(served.consent.model_copy(update={"topic_optout": "no.such.optout"}))
    with pytest.raises(ChatlogError, match="CHATLOG_KAFKA_BOOTSTRAP_SERVERS"):
        preflight(served.consent.model_copy(update={"kafka_bootstrap_servers": "127.0.0.1:1"}))
    preflight(served.consent.model_copy(update={"serve_consent": False, "topic_optout": "no.such.optout"}))
