"""Errors answered as JSON: ``{"status": 404, "message": "..."}`` (justlog's ``ErrorResponse`` is
``{"message"}``), one line, never a traceback for what the client sent."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("chatlog.serve")


class ApiError(Exception):
    """An answer other than 2xx/3xx, with the reason the client reads."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def error_response(status: int, message: str, code: str | None = None) -> JSONResponse:
    """The error body; with ``code``, also recent-messages2's fields (``status_message``, ``error``,
    ``error_code``), so its clients read it as theirs."""
    body: dict[str, object] = {"status": status, "message": message}
    if code is not None:
        body.update(status_message=HTTPStatus(status).phrase, error=message, error_code=code)
    return JSONResponse(body, status_code=status)


async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    response = error_response(exc.status, exc.message, exc.code)
    response.headers.update(exc.headers or {})
    return response


def storage_errors() -> tuple[type[Exception], ...]:
    """The driver's exceptions for a Cassandra that is down, slow or overloaded."""
    from cassandra import DriverException, OperationTimedOut
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException

    return (DriverException, OperationTimedOut, NoHostAvailable, ConnectionException)


async def on_storage_error(request: Request, exc: Exception) -> JSONResponse:
    """A Cassandra that did not answer: a 503 in one line, as /health says it (never a 500 and a
    traceback); the log has one line naming the error's type."""
    log.warning(
        "%s %s: the log storage did not answer: %s",
        request.method,
        request.url.path[:200],
        type(exc).__name__,
    )
    response = error_response(503, "the log storage did not answer; try again")
    response.headers["Retry-After"] = "5"
    return response


async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = "no such route" if exc.status_code == 404 else str(exc.detail)
    response = error_response(exc.status_code, message)
    response.headers.update(exc.headers or {})  # e.g. a 405's Allow
    return response


async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    names = sorted({_where(err.get("loc", ())) for err in exc.errors()})
    return error_response(400, f"invalid parameter: {', '.join(names)}")


def _where(loc: Any) -> str:
    """The parameter a validation error is about: the field's name (``body`` alone: the body is not JSON of
    the expected shape; a position in it means nothing to the client)."""
    parts = [str(part) for part in loc if not isinstance(part, int)] if isinstance(loc, tuple | list) else []
    if len(parts) > 1 and parts[0] in {"body", "query", "path", "header"}:
        return parts[-1]
    return parts[-1] if parts else "?"
