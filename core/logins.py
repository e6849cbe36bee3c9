"""A channel or user name as a person writes it (``#SomeChannel``) into the login it is stored under."""

from __future__ import annotations


def login_of(text: str) -> str:
    """``text`` as a stored login: without surrounding whitespace or leading ``#``, in lower case
    (``" #Foo "`` -> ``foo``). Nothing is checked: an empty result means no name was given."""
    return text.strip().lstrip("#").lower()
