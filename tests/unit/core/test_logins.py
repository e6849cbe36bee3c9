"""A name as given into the login it is stored under."""

from __future__ import annotations

import pytest

from core.logins import login_of


@pytest.mark.parametrize(
    ("given", "login"),
    [
        ("foo", "foo"),
        ("#Foo", "foo"),
        ("  ##SomeChannel \n", "somechannel"),
        ("#", ""),
        ("  ", ""),
        ("a#b", "a#b"),
    ],
)
def test_whitespace_leading_hashes_and_case_are_dropped(given: str, login: str) -> None:
    assert login_of(given) == login
