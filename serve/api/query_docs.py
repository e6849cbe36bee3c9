"""The query parameters the log routes share, declared once for /openapi.json and /docs.

The routes read them from the request (:func:`serve.api.params.log_query` parses and checks them, with a
400 that names what is wrong); these declarations only document them. A route lists the groups it takes:
``@router.get(path, openapi_extra=documented(FORMATS, PAGING, RANGE))``. They are OpenAPI parameter objects,
not FastAPI dependencies: a dependency is solved on every request (~10 % of a small answer's serving CPU for
nine parameters nobody reads through it).
"""

from __future__ import annotations

from typing import Any, Final

Parameter = dict[str, Any]


def _query(name: str, description: str) -> Parameter:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": name.capitalize()},
        "description": description,
    }


_FLAG: Final = "Flag: present selects the format."
FORMATS: Final[tuple[Parameter, ...]] = tuple(
    _query(name, _FLAG) for name in ("json", "jsonBasic", "raw", "ndjson")
)
"""Text (none of them), ``json``, ``jsonBasic``, ``raw`` or ``ndjson``."""
PAGING: Final[tuple[Parameter, ...]] = (
    _query("reverse", "Flag: newest first."),
    _query("limit", "At most this many lines."),
    _query("offset", "Skip this many lines first."),
)
"""Newest first, and a page of the lines."""
RANGE: Final[tuple[Parameter, ...]] = (
    _query("from", "Unix seconds or RFC 3339."),
    _query("to", "Unix seconds or RFC 3339 (included)."),
)
"""A time range."""


def documented(*groups: tuple[Parameter, ...]) -> dict[str, Any]:
    """A route's ``openapi_extra`` declaring the query parameters of ``groups`` (after its own)."""
    return {"parameters": [dict(parameter) for group in groups for parameter in group]}
