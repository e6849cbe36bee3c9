"""serve/api/openapi30.py: /swagger.json is the API's OpenAPI document in the 3.0 dialect, what Swagger UI 4
reads (chatlog's /docs, and justlog's web frontend, whose Docs.tsx loads ``/swagger.json`` with
swagger-ui-react 4); /openapi.json stays FastAPI's 3.1."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from consent.settings import ConsentSettings
from core.settings import load
from serve.api.app import create_app
from serve.api.openapi30 import downgrade
from serve.settings import ServeSettings
from serve.testing import MemoryStore

NO_CONSENT = ConsentSettings(serve_consent=False)  # the app's lifespan without the opt-out registry: no Kafka


def _get(path: str) -> Any:
    with TestClient(create_app(load(ServeSettings), MemoryStore(), consent=NO_CONSENT)) as client:
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        return answer.json()


def _nulls(node: Any) -> list[Any]:
    """Every 3.1-only construct left in ``node``: a ``null`` type, a ``type`` list, a schema ``const``."""
    found = []
    if isinstance(node, dict):
        if node.get("type") == "null" or isinstance(node.get("type"), list):
            found.append(node)
        found.extend(x for v in node.values() for x in _nulls(v))
    elif isinstance(node, list):
        found.extend(x for v in node for x in _nulls(v))
    return found


def test_swagger_json_is_the_same_api_in_openapi_30() -> None:
    full, swagger = _get("/openapi.json"), _get("/swagger.json")
    assert full["openapi"].startswith("3.1") and swagger["openapi"] == "3.0.3"
    assert swagger["paths"].keys() == full["paths"].keys() and len(swagger["paths"]) > 20
    assert {"/channels", "/{ct}/{c}/{y}/{m}/{d}", "/{ct}/{c}/{ut}/{u}/{y}/{m}", "/optout"} <= set(
        swagger["paths"]
    )
    assert _nulls(full) and not _nulls(swagger)
    docs = _get_text("/docs")
    assert "/swagger.json" in docs and "/openapi.json" not in docs


def _get_text(path: str) -> str:
    with TestClient(create_app(load(ServeSettings), MemoryStore(), consent=NO_CONSENT)) as client:
        text: str = client.get(path).text
        return text


def test_31_schemas_become_30_ones() -> None:
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1", "summary": "s", "license": {"name": "x", "identifier": "MIT"}},
        "paths": {},
        "webhooks": {},
        "components": {
            "schemas": {
                "A": {
                    "properties": {
                        "maybe": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
                        "ref": {"anyOf": [{"$ref": "#/components/schemas/B"}, {"type": "null"}]},
                        "listed": {"type": ["integer", "null"], "exclusiveMinimum": 0},
                        "fixed": {"const": "x", "examples": ["x"]},
                        "const": {"type": "string"},
                    }
                }
            }
        },
    }
    before = json.dumps(document)
    got = downgrade(document)
    assert json.dumps(document) == before  # a copy
    props = got["components"]["schemas"]["A"]["properties"]
    assert props["maybe"] == {"type": "string", "maxLength": 3, "nullable": True}
    assert props["ref"] == {"anyOf": [{"$ref": "#/components/schemas/B"}], "nullable": True}
    assert props["listed"] == {"type": "integer", "nullable": True, "minimum": 0, "exclusiveMinimum": True}
    assert props["fixed"] == {"enum": ["x"], "example": "x"}
    assert props["const"] == {"type": "string"}
    assert "webhooks" not in got and got["info"] == {"title": "t", "version": "1", "license": {"name": "x"}}
