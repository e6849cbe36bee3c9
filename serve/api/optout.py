"""Consent over HTTP: the admin API (key-protected) and the public self-service code.

* ``POST /admin/optout`` ``{kind, id, reason, keep_history}``: opt a user or channel out, then erase its
  rows (unless ``keep_history``); ``DELETE /admin/optout/{kind}/{id}``: lift it; ``GET /admin/optout``: the
  current opt-outs (``?audit=1``: the audit, newest first); ``POST /admin/erase`` ``{user_id, channel_id}``.
  A key from ``CHATLOG_SERVE_ADMIN_KEYS`` (``name:secret`` pairs) in ``Authorization: Bearer <key>`` or
  ``X-Api-Key``; compared in constant time; a missing or wrong key is a 401; without any key configured
  these routes answer 404. The audit records the key's name (``api:<name>``).
* ``POST /optout`` (public): a short-lived single-use code, a bare JSON string as justlog and rustlog
  answer (``?details=1``: ``{code, expires_at, command}``); whoever types ``<command> optout <code>`` in a
  logged channel opts out (the ingester recognises it; ``!justlog`` and ``!rustlog``, what those frontends
  tell users to type, by default too: ``CHATLOG_OPTOUT_COMMAND_ALIASES``). The code is published as
  ``code:<code>`` on the opt-out topic and audited.

The app's lifespan (:mod:`serve.api.app`) puts the registry, the settings and a publisher in
``app.state``: ``optout_registry``, ``consent_settings``, ``optout_publisher``.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from consent import audit
from consent.publish import OptOutPublisher
from consent.records import ID_PATTERN, InvalidRecord, OptOut, check_id
from consent.registry import OptOutRegistry
from consent.settings import ConsentSettings
from core.errors import ChatlogError
from core.times import now_ms
from serve.api.named import store_of
from serve.errors import ApiError, bad_request, not_found
from store.erase import erase

log = logging.getLogger(__name__)

router = APIRouter()


class OptOutBody(BaseModel):
    kind: Literal["user", "channel"]
    id: str = Field(pattern=ID_PATTERN.pattern, description="A Twitch user or channel id (digits).")
    reason: str | None = Field(default=None, max_length=500)
    keep_history: bool = False


class EraseBody(BaseModel):
    user_id: str | None = Field(default=None, pattern=ID_PATTERN.pattern)
    channel_id: str | None = Field(default=None, pattern=ID_PATTERN.pattern)


def _state(request: Request) -> tuple[ConsentSettings, OptOutRegistry, OptOutPublisher]:
    state = request.app.state
    settings = getattr(state, "consent_settings", None)
    registry = getattr(state, "optout_registry", None)
    publisher = getattr(state, "optout_publisher", None)
    if settings is None or registry is None or publisher is None:
        raise ApiError(503, "opt-outs are not enforced by this server (CHATLOG_SERVE_CONSENT)")
    return settings, registry, publisher


def key_name(settings: ConsentSettings, authorization: str | None, api_key: str | None) -> str:
    """The name of the admin key the request carries; 404 when no key is configured, 401 otherwise."""
    keys = settings.admin_keys()
    if not keys:
        raise not_found("no such route (the admin API is off: CHATLOG_SERVE_ADMIN_KEYS is not set)")
    given = api_key
    if given is None and authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip()
    if not given:
        raise ApiError(401, "an admin key is required (Authorization: Bearer <key>, or X-Api-Key)")
    found = None
    for name, secret in keys.items():  # every key compared, in constant time each
        if hmac.compare_digest(secret.get_secret_value().encode(), given.encode()):
            found = name
    if found is None:
        raise ApiError(401, "wrong admin key")
    return found


AuthHeader = Annotated[str | None, Header(alias="Authorization", include_in_schema=False)]
KeyHeader = Annotated[str | None, Header(alias="X-Api-Key", include_in_schema=False)]


async def _admin(request: Request, authorization: AuthHeader = None, x_api_key: KeyHeader = None) -> str:
    """``api:<key name>`` of the request's admin key. A dependency: FastAPI runs it before it validates the
    body, so a caller without a key learns nothing of what a valid body looks like."""
    settings, _registry, _publisher = _state(request)
    return f"api:{key_name(settings, authorization, x_api_key)}"


Admin = Annotated[str, Depends(_admin)]


def _session(request: Request) -> tuple[Any, str]:
    store = store_of(request)
    session = store.session
    if session is None:
        raise ApiError(501, "this log storage has no Cassandra session (audit and erasure need one)")
    return session, request.app.state.consent_keyspace


async def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn`` in a thread; a ChatlogError (a service down, a bad id) is a 503/400 in one line."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except InvalidRecord as exc:
        raise bad_request(str(exc)) from None
    except ChatlogError as exc:
        raise ApiError(503, f"{what}: {exc}") from None
    except Exception as exc:  # the driver's errors: one line, never a traceback to the client
        log.warning("%s failed: %s: %s", what, type(exc).__name__, str(exc)[:200])
        raise ApiError(503, f"{what} failed: {type(exc).__name__}; try again") from None


def _optout_json(o: OptOut) -> dict[str, Any]:
    return o.model_dump()


@router.post("/admin/optout", summary="Opt a user or channel out, and erase its rows unless keep_history")
async def admin_optout(request: Request, by: Admin, body: OptOutBody) -> JSONResponse:
    _settings, _registry, publisher = _state(request)
    session, keyspace = _session(request)
    record: OptOut = await _call(
        "publishing the opt-out",
        publisher.add,
        body.kind,
        body.id,
        reason=body.reason,
        by=by,
        keep_history=body.keep_history,
    )
    await _call("writing the audit", audit.record_optout, session, keyspace, record)
    erased = None
    if not body.keep_history:
        report = await _call(
            "erasing",
            erase,
            session,
            keyspace,
            user_id=body.id if body.kind == "user" else None,
            channel_id=body.id if body.kind == "channel" else None,
            by=by,
        )
        erased = report.as_json()
    return JSONResponse({"optout": _optout_json(record), "erased": erased})


@router.delete("/admin/optout/{kind}/{id}", summary="Lift an opt-out")
async def admin_lift(request: Request, by: Admin, kind: str, id: str) -> JSONResponse:
    _settings, registry, publisher = _state(request)
    try:
        the_id = check_id(kind, id)
    except InvalidRecord as exc:
        raise bad_request(str(exc)) from None
    if registry.optout(kind, the_id) is None:  # nothing to lift: no lift record, no audit entry
        raise not_found(f"{kind} {the_id} has not opted out")
    session, keyspace = _session(request)
    at = now_ms()
    await _call("publishing the lift", publisher.remove, kind, the_id, by=by)
    await _call(
        "writing the audit",
        audit.record,
        session,
        keyspace,
        action="lift",
        kind=kind,
        id=the_id,
        by=by,
        at=at,
    )
    return JSONResponse({"lifted": {"kind": kind, "id": the_id}})


@router.get("/admin/optout", summary="The current opt-outs (?audit=1: the consent audit, newest first)")
async def admin_list(
    request: Request,
    _by: Admin,
    audit_log: Annotated[bool, Query(alias="audit")] = False,
    limit: int = 1000,
) -> JSONResponse:
    _settings, registry, _publisher = _state(request)
    if audit_log:
        session, keyspace = _session(request)
        entries = await _call(
            "reading the audit", audit.read, session, keyspace, limit=max(1, min(limit, 10_000))
        )
        return JSONResponse({"audit": [e.as_json() for e in entries]})
    return JSONResponse({"optouts": [_optout_json(o) for o in registry.optouts()]})


@router.post("/admin/erase", summary="Erase a user (everywhere or in one channel) or a whole channel")
async def admin_erase(request: Request, by: Admin, body: EraseBody) -> JSONResponse:
    if body.user_id is None and body.channel_id is None:
        raise bad_request("give user_id, channel_id, or both")
    session, keyspace = _session(request)
    report = await _call(
        "erasing", erase, session, keyspace, user_id=body.user_id, channel_id=body.channel_id, by=by
    )
    return JSONResponse({"erased": report.as_json()})


class CodeRates:
    """The per-address and all-clients limits on self-service codes, parsed once (in-memory, per server
    process: ``chatlog serve`` on N worker processes allows up to N times each, :mod:`serve.api.workers`)."""

    def __init__(self, settings: ConsentSettings) -> None:
        from limits import parse
        from limits.storage import MemoryStorage
        from limits.strategies import MovingWindowRateLimiter

        self.limiter = MovingWindowRateLimiter(MemoryStorage())
        self.per_address = settings.optout_code_rate, parse(settings.optout_code_rate)
        self.total = settings.optout_code_rate_total, parse(settings.optout_code_rate_total)

    def take(self, address: str) -> None:
        """Count a code for ``address``; a 429 (nothing counted) when this address, or all clients
        together, are at their limit."""
        checks = [(*self.per_address, address), (*self.total, "*")]
        for rate, limit, key in checks:
            if not self.limiter.test(limit, "optout-code", key):
                who = "this address" if key != "*" else "all clients"
                raise ApiError(
                    429,
                    f"too many opt-out codes asked for by {who} (at most {rate}); try again later",
                    headers={"Retry-After": str(limit.get_expiry())},
                )
        for _, limit, key in checks:  # no await in between: nothing else counts in the meantime
            self.limiter.hit(limit, "optout-code", key)


def _code_allowed(request: Request, settings: ConsentSettings) -> None:
    """A 429 when the client's address, or all clients together, asked for more codes than
    ``CHATLOG_OPTOUT_CODE_RATE`` / ``..._TOTAL`` allow."""
    state = request.app.state
    rates = getattr(state, "code_rates", None)
    if rates is None:
        rates = state.code_rates = CodeRates(settings)
    rates.take(request.client.host if request.client is not None else "?")


@router.post(
    "/optout",
    summary="A short-lived code: type `<command> optout CODE` in a logged channel",
    description=(
        "The code as a bare JSON string, as justlog and rustlog answer (their web frontends show it as is). "
        "`?details=1`: `{code, expires_at, command}` (the command to type, with this server's command word)."
    ),
)
async def self_service_code(
    request: Request,
    details: Annotated[bool, Query(description="Answer `{code, expires_at, command}`.")] = False,
) -> JSONResponse:
    settings, _registry, publisher = _state(request)
    _code_allowed(request, settings)
    code = await _call(
        "publishing the code", publisher.issue_code, by="api:self-service", ttl_s=settings.optout_code_ttl_s
    )
    store = store_of(request)
    session = store.session
    if session is not None:
        await _call("writing the audit", audit.record_code, session, request.app.state.consent_keyspace, code)
    no_store = {"Cache-Control": "no-store"}
    if not details:
        return JSONResponse(code.code, headers=no_store)
    command = f"{settings.optout_command} optout {code.code}"
    return JSONResponse(
        {"code": code.code, "expires_at": code.expires_at, "command": command}, headers=no_store
    )
