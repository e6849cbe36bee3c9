"""The public self-service route's rate limit (per client address and in all), on the app with a
publisher double (the route's Kafka and Cassandra parts are tested in tests/integration/serve)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx
import pytest

from consent.records import Code, new_code
from consent.settings import ConsentSettings
from core.errors import SettingsError
from core.settings import load
from core.times import now_ms
from serve.api.app import create_app
from serve.settings import ServeSettings
from serve.testing import MemoryStore


class CountingPublisher:
    def __init__(self) -> None:
        self.issued = 0

    def issue_code(self, *, by: str, ttl_s: float) -> Code:
        self.issued += 1
        return Code(code=new_code(), expires_at=now_ms() + int(ttl_s * 1000), by=by)


def _codes(
    consent: ConsentSettings, clients: Sequence[str | float], path: str = "/optout"
) -> tuple[list[httpx.Response], int]:
    """POST ``path`` once from each of ``clients`` (addresses; a number: seconds to wait); the answers and
    the codes issued."""
    app = create_app(load(ServeSettings), MemoryStore())
    publisher = CountingPublisher()
    app.state.consent_settings, app.state.optout_registry, app.state.optout_publisher = (
        consent,
        object(),
        publisher,
    )

    async def go() -> list[httpx.Response]:
        answers = []
        for address in clients:
            if isinstance(address, float):
                await asyncio.sleep(address)
                continue
            transport = httpx.ASGITransport(app=app, client=(address, 5000))
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                answers.append(await client.post(path))
        return answers

    return asyncio.run(go()), publisher.issued


def test_one_address_gets_its_rate_of_codes_then_a_429_others_still_get_theirs() -> None:
    consent = ConsentSettings(optout_code_rate="2/minute", optout_code_rate_total="100/minute")
    answers, issued = _codes(consent, ["10.0.0.1"] * 3 + ["10.0.0.2"])
    assert [a.status_code for a in answers] == [200, 200, 429, 200]
    assert issued == 3  # the refused one published nothing
    refused = answers[2]
    assert refused.json()["message"] == (
        "too many opt-out codes asked for by this address (at most 2/minute); try again later"
    )
    assert refused.headers["Retry-After"] == "60"


def test_all_addresses_together_are_limited_too() -> None:
    consent = ConsentSettings(optout_code_rate="5/minute", optout_code_rate_total="3/hour")
    answers, issued = _codes(consent, [f"10.0.1.{i}" for i in range(5)])
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    assert issued == 3
    assert "by all clients (at most 3/hour)" in answers[3].json()["message"]


def test_a_rate_that_is_not_one_is_a_settings_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_OPTOUT_CODE_RATE", "lots")
    with pytest.raises(SettingsError) as info:
        load(ConsentSettings)
    assert "CHATLOG_OPTOUT_CODE_RATE" in str(info.value) and "5/minute" in str(info.value)


def test_a_code_refused_for_all_clients_does_not_count_against_its_address() -> None:
    consent = ConsentSettings(optout_code_rate="2/minute", optout_code_rate_total="3/second")
    clients: list[str | float] = ["10.0.2.1", "10.0.2.1", "10.0.2.2", "10.0.2.2", 1.2, "10.0.2.2"]
    answers, issued = _codes(consent, clients)
    # 10.0.2.2's second ask is refused by the total; once that frees up, its second code is still its own
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 200]
    assert issued == 4


def test_the_code_is_a_bare_json_string_as_justlogs_and_rustlogs_frontends_read_it() -> None:
    # their Optout.tsx: fetch(base + "/optout", {method: "POST"}).then(res => res.json()).then(setCode)
    (answer,), _ = _codes(ConsentSettings(), ["10.0.2.1"])
    code = answer.json()
    assert isinstance(code, str) and len(code) == 8, answer.text
    assert (
        answer.headers["content-type"] == "application/json" and answer.headers["cache-control"] == "no-store"
    )
    (rich,), _ = _codes(ConsentSettings(), ["10.0.2.2"], "/optout?details=1")
    body = rich.json()
    assert (
        set(body) == {"code", "expires_at", "command"}
        and body["command"] == f"!chatlog optout {body['code']}"
    )
