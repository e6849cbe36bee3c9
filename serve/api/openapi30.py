"""The API's OpenAPI document in the 3.0 dialect, for the Swagger UIs that cannot read 3.1.

FastAPI writes OpenAPI 3.1 (``/openapi.json``). Swagger UI 4 (the one the ``swagger-ui-bundle`` package
ships for ``/docs``, and the ``swagger-ui-react`` 4 of justlog's web frontend, which loads
``/swagger.json``) answers 3.1 with "Unable to render this definition". The same document in the 3.0
dialect renders in both; what differs is the JSON Schema of 3.1:

* ``anyOf: [X, {"type": "null"}]`` (FastAPI's ``X | None``) -> ``X`` with ``nullable: true``; a ``type``
  list with ``"null"`` -> its other type, ``nullable: true``;
* ``examples: [...]`` in a schema -> ``example`` (the first); ``const`` -> a one-value ``enum``;
* numeric ``exclusiveMinimum``/``exclusiveMaximum`` -> ``minimum``/``maximum`` with the boolean flag.

The paths, operations and descriptions are the same document's.
"""

from __future__ import annotations

import copy
from typing import Any, Final

VERSION: Final = "3.0.3"


def downgrade(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of the OpenAPI 3.1 ``document`` in the 3.0 dialect (the original is not changed)."""
    out = copy.deepcopy(document)
    out["openapi"] = VERSION
    out.pop("webhooks", None)
    out.pop("jsonSchemaDialect", None)
    info = out.get("info")
    if isinstance(info, dict):
        info.pop("summary", None)
        license_ = info.get("license")
        if isinstance(license_, dict):
            license_.pop("identifier", None)
    _walk(out)
    return out


def _walk(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item)
        return
    if not isinstance(node, dict):
        return
    _schema_30(node)
    for value in node.values():
        _walk(value)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1


def _schema_30(node: dict[str, Any]) -> None:
    """``node`` in place, if it is a schema written in 3.1's JSON Schema."""
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list) and any(_is_null(o) for o in options):
            rest = [o for o in options if not _is_null(o)]
            node["nullable"] = True
            if len(rest) == 1 and isinstance(rest[0], dict) and "$ref" not in rest[0]:
                del node[key]
                for k, v in rest[0].items():
                    node.setdefault(k, v)
            else:
                node[key] = rest
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) < len(kind):
            node["nullable"] = True
        if len(kinds) == 1:
            node["type"] = kinds[0]
        else:
            del node["type"]
            node["anyOf"] = [{"type": k} for k in kinds]
    if "const" in node and not isinstance(node["const"], dict):  # a property named const: a schema
        node["enum"] = [node.pop("const")]
    examples = node.get("examples")
    if isinstance(examples, list) and any(k in node for k in ("type", "anyOf", "oneOf", "$ref", "enum")):
        del node["examples"]
        if examples:
            node.setdefault("example", examples[0])
    for bound, flag in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = node.get(bound)
        if isinstance(value, int | float) and not isinstance(value, bool):
            node[flag] = value
            node[bound] = True
