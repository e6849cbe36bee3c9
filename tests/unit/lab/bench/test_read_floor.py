"""lab.bench.read_floor: the table's ratios to justlog and its text; lab.bench.read_floor_app's answers
without Cassandra (its ``http`` mode, its routing)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from lab.bench import read_floor, read_floor_app


def _grid(rates: Mapping[str, float | None]) -> dict[str, Any]:
    return {
        name: {
            "grid": {
                f"{read_floor.KIND}_{clients}": {
                    "requests_per_s": None if rate is None else rate * clients,
                    "p50_ms": 1.0,
                    "p99_ms": 2.0,
                    "cpu_ms_per_request": {"server": 0.5},
                }
                for clients in (1, 32)
            }
        }
        for name, rate in rates.items()
    }


RATES = {
    read_floor.JUSTLOG: 1000.0,
    read_floor.CHATLOG: 250.0,
    read_floor.HTTP_READ: 400.0,
    read_floor.HTTP: 3000.0,
    read_floor.READ: 500.0,
    read_floor.PING: 900.0,
}


def test_each_side_is_compared_with_justlog_at_each_client_count() -> None:
    table = read_floor.table(_grid(RATES), read_floor.Params())
    assert list(table) == ["1", "32"]
    assert table["1"][read_floor.HTTP_READ]["vs_justlog"] == 0.4
    assert table["32"][read_floor.CHATLOG]["requests_per_s"] == 8000.0
    assert table["32"][read_floor.CHATLOG]["vs_justlog"] == 0.25
    assert table["1"][read_floor.JUSTLOG]["vs_justlog"] == 1.0
    assert table["1"][read_floor.HTTP]["cpu_ms_per_request"] == {"server": 0.5}


def test_a_side_with_no_rate_has_no_ratio() -> None:
    table = read_floor.table(_grid({**RATES, read_floor.READ: None}), read_floor.Params())
    assert table["1"][read_floor.READ]["vs_justlog"] is None


def test_the_summary_has_a_line_per_side_and_client_count() -> None:
    text = read_floor.summary({"table": read_floor.table(_grid(RATES), read_floor.Params())})
    lines = text.splitlines()[1:]
    assert len(lines) == 2 * len(read_floor.SIDES)
    assert any("floor http+read" in line and "(0.4x)" in line for line in lines)


class _Asgi:
    """One request through the floor app: what it sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def get(self, path: str) -> tuple[int, bytes]:
        scope = {"type": "http", "method": "GET", "path": path}
        asyncio.run(read_floor_app.app(scope, self.receive, self.send))
        return self.sent[0]["status"], self.sent[1]["body"]


@pytest.fixture
def http_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_floor_app._floor, "mode", "http")
    monkeypatch.setattr(read_floor_app._floor, "body", b"x" * 1234)


@pytest.mark.usefixtures("http_mode")
def test_http_mode_answers_a_user_month_with_the_constant_body() -> None:
    assert _Asgi().get("/channelid/1/userid/2/2026/12") == (200, b"x" * 1234)


@pytest.mark.usefixtures("http_mode")
@pytest.mark.parametrize("path", ["/channelid/1/2026/12/3", "/channel/a/user/b", "/"])
def test_anything_but_a_user_month_is_not_found(path: str) -> None:
    assert _Asgi().get(path) == (404, b"")


@pytest.mark.usefixtures("http_mode")
def test_health_answers() -> None:
    assert _Asgi().get("/health") == (200, b"ok")


def test_a_user_month_path_gives_the_query_its_ids_and_month() -> None:
    assert read_floor_app.user_month_params("/channelid/11/userid/22/2026/12") == ("11", "22", 202612)


@pytest.mark.parametrize(
    "path", ["/channel/a/userid/22/2026/12", "/channelid/11/user/b/2026/12", "/channelid/11/userid/22/2026/x"]
)
def test_any_other_path_gives_no_query(path: str) -> None:
    with pytest.raises(ValueError):
        read_floor_app.user_month_params(path)


def test_the_read_mode_asks_part_0_of_the_month_by_both_ids() -> None:
    query = read_floor_app.QUERY.format(keyspace="ks")
    assert query.startswith("SELECT frame FROM ks.user_blocks ")
    assert "channel_key = ? AND user_key = ? AND month = ? AND part = 0" in query


def test_the_ping_goes_to_the_first_contact_point_with_the_login_if_any() -> None:
    from core.settings import load
    from sink.settings import SinkSettings

    plain = load(SinkSettings, cassandra_hosts="10.0.0.5,10.0.0.6", cassandra_port=9142)
    assert read_floor.cassandra_at(plain) == ("10.0.0.5", 9142, None)
    login = load(SinkSettings, cassandra_username="u", cassandra_password="p")
    assert read_floor.cassandra_at(login)[2] == ("u", "p")
