"""The query parameters the log routes share, declared once for /openapi.json and /docs.

The routes read them from the request (:func:`serve.api.params.log_query` parses and checks them, with a
400 that names what is wrong); these dependencies only document them. A route lists the groups it takes:
``@router.get(path, dependencies=[FORMATS, PAGING, RANGE])``. They are ``async``: FastAPI runs a plain
``def`` dependency in its thread pool, a thread hop per dependency and request.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import Depends, Query

FormatFlag = Annotated[str | None, Query(description="Flag: present selects the format.")]
Limit = Annotated[str | None, Query(description="At most this many lines.")]
Offset = Annotated[str | None, Query(description="Skip this many lines first.")]
From = Annotated[str | None, Query(alias="from", description="Unix seconds or RFC 3339.")]
To = Annotated[str | None, Query(description="Unix seconds or RFC 3339 (included).")]


async def _formats(
    json: FormatFlag = None,
    jsonBasic: FormatFlag = None,  # noqa: N803 - the API's name
    raw: FormatFlag = None,
    ndjson: FormatFlag = None,
) -> None:
    """Text (none of them), ``json``, ``jsonBasic``, ``raw`` or ``ndjson``."""


async def _paging(reverse: FormatFlag = None, limit: Limit = None, offset: Offset = None) -> None:
    """Newest first, and a page of the lines."""


async def _range(from_: From = None, to: To = None) -> None:
    """A time range."""


FORMATS: Final = Depends(_formats)
PAGING: Final = Depends(_paging)
RANGE: Final = Depends(_range)
