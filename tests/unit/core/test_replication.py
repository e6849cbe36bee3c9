"""CHATLOG_CASSANDRA_REPLICATION goes into CQL only as a parsed, re-rendered replication map (issue 13,
item 10; core/replication.py): a ``;``, a quote or a comment cannot reach the statement, which the schema
(store/schema.py) refuses too, whatever the caller validated."""

from __future__ import annotations

import pytest

from core.errors import SettingsError
from core.replication import normalize_replication, render_replication, replication_map
from core.settings import CassandraSettings, load
from store.schema import statements

DEFAULT = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (DEFAULT, DEFAULT),
        (
            '{"class":"SimpleStrategy","replication_factor":3}',
            "{'class': 'SimpleStrategy', 'replication_factor': 3}",
        ),
        (
            "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'us-east.2': '3/1'}",
            "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'us-east.2': '3/1'}",
        ),
        (
            "  {'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '2'}  ",
            "{'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc1': '2'}",
        ),
    ],
)
def test_valid_maps_are_rendered_back_from_the_parsed_values(text: str, canonical: str) -> None:
    assert normalize_replication(text) == canonical
    assert render_replication(replication_map(canonical)) == canonical  # a fixed point


@pytest.mark.parametrize(
    "text",
    [
        DEFAULT + "; DROP KEYSPACE chatlog",
        "{'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = false",
        "{'class': 'SimpleStrategy', 'replication_factor': '1; DROP KEYSPACE chatlog'}",
        "{'class': 'SimpleStrategy', 'replication_factor': \"1' } ; DROP KEYSPACE chatlog; --\"}",
        "{'class': 'SimpleStrategy', \"x'y\": 1}",
        "{'class': 'SimpleStrategy', 'replication_factor': 1} -- comment",
        "{'class': 'EverywhereStrategy'}",
        "{'class': 'org.apache.cassandra.locator.X;Y'}",
        "{'replication_factor': 1}",
        "{'class': 'SimpleStrategy', 'replication_factor': True}",
        "{'class': 'SimpleStrategy', 'replication_factor': -1}",
        "{'class': 'SimpleStrategy', 'replication_factor': 1.5}",
        "{'class': 'SimpleStrategy', 'replication_factor': [1]}",
        "{'class': 'SimpleStrategy', 1: 1}",
        "__import__('os').system('true')",
        "['class', 'SimpleStrategy']",
        "",
        "{" * 5000,
        "{'class': 'SimpleStrategy', 'x': '" + "a" * 3000 + "'}",
    ],
)
def test_anything_else_is_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        replication_map(text)
    with pytest.raises(ValueError):
        statements("chatlog", text)  # the schema refuses it too, whatever the caller validated


def test_the_setting_is_validated_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATLOG_CASSANDRA_REPLICATION", DEFAULT + "; DROP KEYSPACE chatlog")
    with pytest.raises(SettingsError) as info:
        load(CassandraSettings)
    assert str(info.value).startswith("setting cassandra_replication (CHATLOG_CASSANDRA_REPLICATION): ")
    monkeypatch.setenv("CHATLOG_CASSANDRA_REPLICATION", '{"class": "NetworkTopologyStrategy", "dc1": 3}')
    assert load(CassandraSettings).cassandra_replication == "{'class': 'NetworkTopologyStrategy', 'dc1': 3}"
