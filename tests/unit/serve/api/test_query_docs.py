"""Every log route documents the query parameters it reads (OpenAPI), from the one declaration."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI, Request

from core.settings import load
from serve.api import query_docs
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


@pytest.mark.parametrize(
    ("path", "wanted"),
    [
        ("/{ct}/{c}", ["ct", "c"]),
        ("/{ct}/{c}/{y}/{m}/{d}", ["ct", "c", "y", "m", "d"]),
        ("/{ct}/{c}/{ut}/{u}", ["ct", "c", "ut", "u"]),
        ("/{ct}/{c}/{ut}/{u}/{y}/{m}", ["ct", "c", "ut", "u", "y", "m"]),
    ],
)
def test_a_route_reading_its_path_parameters_documents_them_first(
    spec: dict[str, Any], path: str, wanted: list[str]
) -> None:
    operation = spec["paths"][path]["get"]
    assert [p["name"] for p in operation["parameters"] if p["in"] == "path"] == wanted
    assert operation["parameters"][: len(wanted)] == list(query_docs.path(*wanted))
    assert list(operation["responses"]) == ["200", "422"]


def test_path_parameters_are_documented_as_fastapi_documents_a_str_parameter() -> None:
    """The same document as when FastAPI reads them (``ct: str``): how a route reads them does not show."""
    app = FastAPI()

    @app.get("/declared/{ct}/{c}")
    async def declared(ct: str, c: str) -> None: ...

    @app.get("/read/{ct}/{c}", openapi_extra=query_docs.documented(query_docs.path("ct", "c")))
    async def read(request: Request) -> None: ...

    paths = app.openapi()["paths"]
    by_fastapi, by_us = paths["/declared/{ct}/{c}"]["get"], paths["/read/{ct}/{c}"]["get"]
    assert by_us["parameters"] == by_fastapi["parameters"]
    assert by_us["responses"] == by_fastapi["responses"]
