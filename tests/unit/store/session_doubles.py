"""A session double for the store's statements (:class:`core.testing_cassandra.FakeSession`, with what the
store's writers read of a session): its prepared statements are their CQL text and take the attributes a
writer sets on one (idempotence, consistency, fetch size), and it has a cluster of one host."""

from __future__ import annotations

from types import SimpleNamespace

from core.testing_cassandra import FakeSession


class Statement(str):
    """A prepared statement as the double gives it: its CQL text, with settable attributes."""


class PreparingSession(FakeSession):
    """:class:`FakeSession` whose statements are :class:`Statement`, on a cluster of one host."""

    cluster = SimpleNamespace(metadata=SimpleNamespace(all_hosts=lambda: ["127.0.0.1"]))

    def prepare(self, query: str) -> str:
        return Statement(super().prepare(query))
