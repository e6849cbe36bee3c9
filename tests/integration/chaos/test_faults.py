"""Fault injection on the whole pipeline (``make chaos``).

Each test runs the real pipeline (simulated chatters → InspIRCd → ingesters → Kafka → Spark sink → Cassandra),
injects one fault while traffic flows, drains, and checks the invariant: every message the simulator sent
while its channel had a logger is stored in Cassandra, once (a fault that restarts the sink: also read once,
:mod:`tests.integration.chaos.read_once`). Faults on the stack's own services (Kafka, Cassandra, InspIRCd)
restart them, so these tests must not run beside other tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.settings import StackSettings
from lab.demo.faults import at, kill_ingester, kill_sink, restart_service, start_ingester
from lab.demo.run import RunConfig, execute
from lab.stack import manager
from tests.integration.chaos.read_once import doubled_in_reads

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

SMALL = {"channels": 60, "rate": 400.0, "duration": 40.0}


def run(stack: StackSettings, name: str, *, sink_restarts: bool = False, **kw: object) -> dict[str, object]:
    """The demo's run with ``kw``; every message stored once (``sink_restarts``: and read once)."""
    config = RunConfig(name=f"chaos-{name}", **{**SMALL, **kw})  # type: ignore[arg-type]
    rep = execute(stack, config, console=None)
    print(f"{name}: {rep.line()} details={rep.details}")
    assert rep.sent > 0.8 * config.rate * config.duration, "the simulator could not send"
    assert rep.details["rows_doubled"] == 0, "a message was stored twice"
    if sink_restarts:
        assert doubled_in_reads(stack, rep.details) == 0, "a message was read twice"
    return {"lost": rep.lost, **rep.details, "max_gap_s": rep.max_gap_s, "recovery_s": rep.recovery_s}


@pytest.fixture(autouse=True)
def _stack_back_up(stack: StackSettings) -> Iterator[None]:
    yield
    manager.up(stack, report=lambda _m: None)


def test_kill_ingester_with_two_replicas_loses_nothing(stack: StackSettings) -> None:
    res = run(stack, "kill-r2", faults=[at(0.3, kill_ingester("r0b")), at(0.6, start_ingester("r0c", 0))])
    assert res["lost"] == 0
    assert res["max_gap_s"] == 0.0


def test_kill_ingester_with_one_replica_measures_the_gap(stack: StackSettings) -> None:
    res = run(stack, "kill-r1", workers={"r0a": 0, "r0b": 0}, faults=[at(0.3, kill_ingester("r0b"))])
    # Messages sent while a channel had no logger may be lost; none sent while it had one.
    assert res["lost_while_covered"] == 0
    assert res["recovery_s"] is not None
    print(f"R=1 gap: max_gap_s={res['max_gap_s']:.1f} lost={res['lost']} recovery_s={res['recovery_s']:.1f}")


def test_kill_sink_mid_batch_and_restart(stack: StackSettings) -> None:
    res = run(stack, "kill-sink", sink_restarts=True, faults=[at(0.4, kill_sink())])
    assert res["lost"] == 0


def test_restart_kafka(stack: StackSettings) -> None:
    res = run(stack, "kafka", faults=[at(0.3, restart_service("kafka", stack, 5))], drain_timeout_s=180.0)
    assert res["lost_while_covered"] == 0


def test_stop_cassandra_for_30s(stack: StackSettings) -> None:
    res = run(
        stack,
        "cassandra",
        duration=60.0,
        faults=[at(0.2, restart_service("cassandra", stack, 30))],
        drain_timeout_s=240.0,
    )
    assert res["lost"] == 0


def test_restart_irc_server(stack: StackSettings) -> None:
    res = run(stack, "ircd", faults=[at(0.3, restart_service("inspircd", stack, 3, kill=True))])
    assert res["lost_while_covered"] == 0


def test_ten_times_burst(stack: StackSettings) -> None:
    res = run(stack, "burst", burst=(0.3, 10.0, 5.0), drain_timeout_s=180.0)
    assert res["lost"] == 0
