"""``chatlog names``' identities without Cassandra: the ids a query names (as an id and as a login), each
with its whole history (read by serve/store/names.py over a session double)."""

from __future__ import annotations

import asyncio

from chatlog.cli.names import identities
from core.testing_cassandra import reads
from tests.name_history import NAME_TABLES, session_of


def test_identities_by_login_give_each_id_with_its_whole_history() -> None:
    found = asyncio.run(identities(session_of(NAME_TABLES), "ks", "oldname"))
    assert [(i.id, [n.login for n in i.names]) for i in found] == [
        ("42", ["oldname", "newname"]),
        ("77", ["oldname"]),
    ]


def test_a_number_is_looked_up_as_an_id_and_as_a_login_and_unknown_ids_are_left_out() -> None:
    session = session_of(NAME_TABLES)
    found = asyncio.run(identities(session, "ks", "42"))
    assert [i.id for i in found] == ["42"]
    assert ("user_ids_by_login", "42") in reads(session)
    assert asyncio.run(identities(session_of(NAME_TABLES), "ks", "123")) == []
    assert asyncio.run(identities(session_of(NAME_TABLES), "ks", "nobody")) == []
