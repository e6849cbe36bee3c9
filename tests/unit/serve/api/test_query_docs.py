"""Every log route documents the query parameters it reads (OpenAPI), from the one declaration."""

from __future__ import annotations

from typing import Any

import pytest

from core.settings import load
from serve.api.app import create_app
from serve.settings import ServeSettings

FORMATS = ["json", "jsonBasic", "raw", "ndjson"]
LINES = [*FORMATS, "reverse", "limit", "offset", "from", "to"]


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    store: Any = object()  # the spec is built from the routes alone; no request reaches the store
    document: dict[str, Any] = create_app(load(ServeSettings), store).openapi()
    return document


@pytest.mark.parametrize(
    ("path", "wanted"),
    [
        ("/{ct}/{c}", LINES),
        ("/{ct}/{c}/{y}/{m}/{d}", LINES),
        ("/{ct}/{c}/{ut}/{u}/{y}/{m}", LINES),
        ("/{ct}/{c}/search", ["q", *LINES]),
        ("/{ct}/{c}/{ut}/{u}/search", ["q", *LINES]),
        ("/{ct}/{c}/random", FORMATS),
        ("/{ct}/{c}/{ut}/{u}/random", FORMATS),
    ],
)
def test_the_route_documents_its_query_parameters(spec: dict[str, Any], path: str, wanted: list[str]) -> None:
    params = spec["paths"][path]["get"]["parameters"]
    assert [p["name"] for p in params if p["in"] == "query"] == wanted
