"""The parameters the log routes read from the request, declared once for /openapi.json and /docs.

The routes read them from the request (:func:`serve.api.params.log_query` parses and checks them, with a
400 that names what is wrong); these declarations only document them. A route lists the groups it takes:
``@router.get(path, openapi_extra=documented(FORMATS, PAGING, RANGE))``. They are OpenAPI parameter objects,
not FastAPI dependencies: a dependency is solved on every request (~10 % of a small answer's serving CPU for
nine parameters nobody reads through it). The hot routes (a user's month, a channel's day) read their path
parameters from ``request.path_params`` too (:func:`path`): FastAPI's parameters are checked on every request
(~8 % of a small answer's serving CPU for six strings that cannot fail a check).
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


def _validation_error() -> dict[str, Any]:
    """The 422 FastAPI documents for a route with parameters of its own (kept, so the document does not
    change with how a route reads its parameters)."""
    schema = {"$ref": "#/components/schemas/HTTPValidationError"}
    return {"description": "Validation Error", "content": {"application/json": {"schema": schema}}}


def path(*names: str) -> tuple[Parameter, ...]:
    """The path parameters ``names`` (strings, as FastAPI documents ``name: str``), for a route that reads
    them from ``request.path_params``: give the route ``openapi_extra=documented(path(...), ...)``."""
    return tuple(
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "title": name.capitalize()},
        }
        for name in names
    )


def documented(*groups: tuple[Parameter, ...]) -> dict[str, Any]:
    """A route's ``openapi_extra`` declaring the parameters of ``groups`` (after its own); with path
    parameters among them, the route's 422 as FastAPI documents it for a route with parameters."""
    extra: dict[str, Any] = {"parameters": [dict(p) for group in groups for p in group]}
    if any(p["in"] == "path" for group in groups for p in group):
        extra["responses"] = {"422": _validation_error()}
    return extra
