"""The Grafana dashboard and Prometheus config in monitoring/ read metrics that chatlog really exports, and
docker-compose provisions them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from tests.unit.deploy import tooling

MONITORING = tooling.REPO / "monitoring"
_SUFFIXES = ("_total", "_bucket", "_sum", "_count")


def _exported_names() -> set[str]:
    """Every metric name the product code defines (string literals and prefixed f-strings)."""
    names: set[str] = set()
    sources: list[Path] = []
    for package in ("core", "ingest", "sink", "serve", "chatlog"):
        sources += (tooling.REPO / package).rglob("*.py")
    for source in sources:
        text = source.read_text()
        names |= set(re.findall(r'"(chatlog_[a-z_]+)"', text))
        for prefix in re.findall(r'_PREFIX: Final = "(chatlog_[a-z_]+)"', text):
            names |= {f"{prefix}_{n}" for n in re.findall(r'f"\{_PREFIX\}_([a-z_]+)"', text)}
        names |= {f"chatlog_ingest_{n}" for n in re.findall(r'p \+ "([a-z_]+)"', text)}
    return names


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((MONITORING / "grafana/dashboards/chatlog.json").read_text())
    return data


def test_every_dashboard_query_reads_a_metric_chatlog_exports() -> None:
    exported = _exported_names()
    queried = set()
    for panel in _dashboard()["panels"]:
        for target in panel["targets"]:
            queried |= set(re.findall(r"\b(chatlog_[a-z_]+)", target["expr"]))
    assert queried, "the dashboard queries nothing"
    unknown = {
        q for q in queried if q not in exported and not any(q.removesuffix(s) in exported for s in _SUFFIXES)
    }
    assert not unknown, f"the dashboard reads metrics nobody exports: {sorted(unknown)}"
    assert "chatlog_monitor_channels_with_gap_last_hour" in queried
    assert "chatlog_monitor_uncovered_channel_seconds" in queried


def test_the_name_check_would_catch_a_typo() -> None:
    exported = _exported_names()
    assert "chatlog_monitor_uncovered_channels" in exported
    assert "chatlog_monitor_uncoverd_channels" not in exported


def test_compose_provisions_prometheus_and_grafana_from_the_repository() -> None:
    compose = yaml.safe_load((tooling.REPO / "docker-compose.yml").read_text())
    configs = compose["configs"]
    for service in ("prometheus", "grafana", "monitor"):
        assert compose["services"][service]["profiles"] == ["observability"]
    for ref in compose["services"]["grafana"]["configs"] + compose["services"]["prometheus"]["configs"]:
        assert (tooling.REPO / configs[ref["source"]]["file"]).is_file(), ref
    prometheus = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    jobs = {j["job_name"] for j in prometheus["scrape_configs"]}
    assert jobs == {"chatlog-ingest", "chatlog-sink", "chatlog-monitor"}
    datasource = yaml.safe_load((MONITORING / "grafana/provisioning/datasources.yml").read_text())
    uids = {d["uid"] for d in datasource["datasources"]}
    assert {p["datasource"]["uid"] for p in _dashboard()["panels"]} <= uids
