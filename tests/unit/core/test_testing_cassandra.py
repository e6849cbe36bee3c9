"""The Cassandra session double: what it records, the rows it answers, the failures it makes, and its
futures (pages, callbacks on another thread or at once)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from core.testing_cassandra import Call, FakeSession, fails_first, rows_by_table, table_of


def test_a_prepared_statement_is_its_text_and_everything_sent_is_recorded() -> None:
    session = FakeSession()
    insert = session.prepare("INSERT INTO ks.t (a) VALUES (?)")
    assert insert == "INSERT INTO ks.t (a) VALUES (?)"
    assert session.execute(insert, (1,)) == []
    session.execute(insert, [2], timeout=5)
    assert session.prepared == [insert]
    assert session.executed == [Call(insert, (1,), 1, {}), Call(insert, (2,), 2, {"timeout": 5})]
    assert session.statements == [insert, insert] and session.attempts[insert] == 2


def test_rows_come_from_the_table_and_partition_key_a_query_names() -> None:
    session = FakeSession(rows_by_table({"names": {"42": [{"login": "a"}, {"login": "b"}]}}))
    rows = session.execute("SELECT login FROM ks.names WHERE id = ?", ("42",))
    assert [row.login for row in rows] == ["a", "b"]
    assert session.execute("SELECT login FROM names WHERE id = ?", ("7",)) == []
    assert session.execute("SELECT x FROM other WHERE id = ?", ("42",)) == []


@pytest.mark.parametrize(
    ("cql", "table"),
    [
        ("SELECT a FROM ks.t WHERE k = ?", "t"),
        ("select a from t", "t"),
        ("INSERT INTO ks.t(a, b) VALUES (?, ?)", "t"),
        ("UPDATE ks.t SET a = ? WHERE k = ?", "t"),
        ("DELETE FROM ks.t USING TIMESTAMP ? WHERE k = ?", "t"),
        ("TRUNCATE", ""),
    ],
)
def test_the_table_of_a_statement(cql: str, table: str) -> None:
    assert table_of(cql) == table


def test_a_statement_fails_its_first_times_then_succeeds() -> None:
    session = FakeSession(lambda _call: ["row"], fail=fails_first(2, lambda: TimeoutError("slow")))
    for _ in range(2):
        with pytest.raises(TimeoutError, match="slow"):
            session.execute("q")
    assert session.execute("q") == ["row"]
    with pytest.raises(TimeoutError):
        session.execute("other")
    assert session.attempts == {"q": 3, "other": 1}


def _collect(future: Any) -> tuple[list[Any], list[BaseException], threading.Event]:
    rows: list[Any] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def on_rows(page: list[Any], tag: str) -> None:
        rows.append((tag, page))
        done.set()

    def on_error(exc: BaseException, tag: str) -> None:
        errors.append(exc)
        assert tag == "e"
        done.set()

    future.add_callbacks(on_rows, on_error, callback_args=("r",), errback_args=("e",))
    return rows, errors, done


def test_a_future_completes_on_another_thread_as_the_drivers_do() -> None:
    session = FakeSession(lambda _call: [1])
    rows, errors, done = _collect(session.execute_async("q", (1,)))
    assert done.wait(5)
    assert rows == [("r", [1])] and errors == []
    assert session.executed == [Call("q", (1,), 1, {})]
    threads: list[threading.Thread] = []
    delivered = threading.Event()

    def on_rows(_page: list[Any]) -> None:
        threads.append(threading.current_thread())
        delivered.set()

    session.execute_async("q").add_callbacks(on_rows, lambda _exc: None)
    assert delivered.wait(5) and threads[0] is not threading.current_thread()


def test_an_inline_future_pages_and_fails_on_the_callers_thread() -> None:
    session = FakeSession(lambda _call: [1, 2, 3, 4, 5], threaded=False, page_size=2)
    future = session.execute_async("q")
    rows, errors, done = _collect(future)
    assert done.is_set() and rows == [("r", [1, 2])]
    while future.has_more_pages:
        future.start_fetching_next_page()
    assert rows == [("r", [1, 2]), ("r", [3, 4]), ("r", [5])] and future.result() == [5]
    with pytest.raises(RuntimeError, match="no more pages"):
        future.start_fetching_next_page()

    failing = FakeSession(fail=lambda _call: ValueError("bad"), threaded=False).execute_async("q")
    rows, errors, done = _collect(failing)
    assert rows == [] and [str(e) for e in errors] == ["bad"] and not failing.has_more_pages
    with pytest.raises(ValueError, match="bad"):
        failing.result()
