"""The ASGI app of ``chatlog serve``: routes, CORS, path normalisation, metrics, health and docs.

``/docs`` is Swagger UI served from the ``swagger-ui-bundle`` package's files under ``/docs/assets`` (no
CDN at run time); ``/openapi.json`` is FastAPI's (OpenAPI 3.1); ``/swagger.json`` the same document in the
3.0 dialect (:mod:`serve.api.openapi30`), which that Swagger UI 4 reads, and justlog's web frontend loads;
``/`` is the web page (:mod:`serve.web`). The Cassandra session is opened when the app starts and closed
when it stops (uvicorn stops on SIGTERM/SIGINT after the responses in flight end).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.errors import one_line
from core.settings import load
from serve.api import capabilities, live, namehistory, openapi30, random, recent, stats
from serve.api import optout as optout_api
from serve.api.gaps import gaps_router
from serve.api.metrics import MetricsMiddleware, ServeMetrics, exposition
from serve.api.middleware import BodyLimit, NormalizePath, ResponseGuard
from serve.api.routes import add_early_routes, router
from serve.api.search import search_router
from serve.consent import OptedOut, on_opted_out, start_consent, stop_consent
from serve.errors import (
    ApiError,
    on_api_error,
    on_http_error,
    on_storage_error,
    on_validation_error,
    storage_errors,
)
from serve.settings import FreshSettings, ServeSettings
from serve.web import mount as mount_web
from store.protocol import LogStore

if TYPE_CHECKING:
    from serve.unwritten import UnwrittenReader

DESCRIPTION = (
    "Chat logs from Cassandra through the justlog/rustlog HTTP API. Formats: text (default), `?json`, "
    "`?jsonBasic`, `?raw`, `?ndjson`; `?reverse`, `?limit`, `?offset`; `?from`/`?to` as unix seconds or "
    "RFC 3339. `{ct}` is `channel` or `channelid`, `{ut}` is `user` or `userid`."
)


def open_store(settings: ServeSettings) -> tuple[Any, LogStore]:
    from core.cql import open_session
    from store.read import LogReader
    from store.schema import require_layout

    # native protocol v4, as the sink's writers: v5 checksums every frame with CRC32 (~2 % of a busy
    # day's serving CPU, py-spy) and the reader uses nothing v5 adds
    cluster, session = open_session(
        settings,
        keyspace=settings.cassandra_keyspace,
        timeout=settings.serve_request_timeout_s,
        protocol_version=4,
    )
    try:
        require_layout(session, settings.cassandra_keyspace)
    except BaseException:
        cluster.shutdown()
        raise
    store = LogReader(
        session, fetch_size=settings.serve_fetch_size, channels_ttl_s=settings.serve_channels_ttl_s
    )
    return cluster, store


def start_fresh(app: FastAPI, keyspace: str, config: FreshSettings) -> UnwrittenReader | None:
    """Wrap the app's store in a :class:`serve.fresh.FreshStore` (``CHATLOG_SERVE_FRESH``, default on): reads
    of the present include what Kafka holds beyond the sink's writes. The reader, to close at the end."""
    from serve.fresh import FreshStore
    from serve.unwritten import UnwrittenReader

    if not config.serve_fresh:
        return None
    reader = UnwrittenReader(config, keyspace)
    app.state.store = FreshStore(app.state.store, reader)
    return reader


def freeze_started() -> None:
    """Leave what a started server holds (its modules, settings, the driver's cluster metadata: ~100k
    objects) out of Python's cyclic collections from now on (:func:`gc.freeze`, after one collection). A
    full collection walked them all while requests were in flight: with 32 in flight at once, collections
    of the oldest generation took up to 105 ms and of the middle one up to 43 ms, a pause every request in
    flight waited out (a /tmp measurement, :data:`gc.callbacks`, 3,000 user-months); frozen, 2 and 4 ms.
    Objects made later are collected as before."""
    gc.collect()
    gc.freeze()


def create_app(
    settings: ServeSettings,
    store: LogStore | None = None,
    *,
    consent: Any = None,
    fresh: FreshSettings | None = None,
    freeze: bool = False,
) -> FastAPI:
    """The app; without ``store`` it connects to Cassandra (``settings``) when it starts. Reads of the
    present include Kafka's unwritten events (:func:`start_fresh`) with ``fresh``, or without a ``store``
    (settings from the environment). ``consent``: :class:`consent.settings.ConsentSettings` (default: from
    the environment). ``freeze``: once started, what the process holds is left out of Python's collections
    (:func:`freeze_started`; ``chatlog serve`` does, a test's app need not)."""
    app = FastAPI(
        title="chatlog",
        description=DESCRIPTION,
        version="1",
        lifespan=_lifespan(settings, store, consent=consent, fresh=fresh, freeze=freeze),
        docs_url=None,
        redoc_url=None,
    )
    metrics = ServeMetrics()
    app.state.metrics = metrics
    if store is not None:
        app.state.store = store
    _add_error_handlers(app)
    _add_service_routes(app, settings, metrics)
    _add_docs(app)
    _add_routes(app, settings)
    app.add_middleware(capabilities.CapabilitiesHeader, fastapi=app)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET"], allow_headers=["*"])
    app.add_middleware(BodyLimit)  # a body past 16 KiB: 413, never read whole into memory
    app.add_middleware(ResponseGuard)  # nosniff, HEAD, a cut stream ends the connection without a last chunk
    app.add_middleware(NormalizePath)  # outermost: routing and metrics see the normalised path
    return app


def _lifespan(
    settings: ServeSettings,
    store: LogStore | None,
    *,
    consent: Any,
    fresh: FreshSettings | None,
    freeze: bool,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's life (:func:`create_app`'s arguments): what it opens when it starts (the Cassandra session
    without a ``store``, the fresh reads, the consent registry; ``freeze``) and closes when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        cluster = None
        reader = None
        if store is None:
            cluster, app.state.store = await asyncio.to_thread(open_store, settings)
        config = fresh if fresh is not None or store is not None else load(FreshSettings)
        if config is not None:
            reader = await asyncio.to_thread(start_fresh, app, settings.cassandra_keyspace, config)
        await start_consent(app, settings, consent)  # the opt-out registry read whole, the store wrapped
        if freeze:
            freeze_started()
        try:
            yield
        finally:
            await stop_consent(app)
            if reader is not None:
                await asyncio.to_thread(reader.close)
            if cluster is not None:
                await asyncio.to_thread(cluster.shutdown)

    return lifespan


def _add_error_handlers(app: FastAPI) -> None:
    """How the app answers an error: the API's and FastAPI's as JSON, the storage's failures as 503s."""
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(OptedOut, on_opted_out)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    for storage_error in storage_errors():
        app.add_exception_handler(storage_error, on_storage_error)


def _add_service_routes(app: FastAPI, settings: ServeSettings, metrics: ServeMetrics) -> None:
    """``/health`` (whether the log storage answers) and ``/metrics`` (Prometheus)."""

    @app.get("/health", summary="200 when the log storage answers, else 503", tags=["service"])
    async def health(request: Request) -> JSONResponse:
        try:
            await asyncio.wait_for(request.app.state.store.ping(), settings.serve_request_timeout_s)
        except Exception as exc:
            reason = one_line(exc, typed=True)
            return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics", summary="Prometheus metrics", tags=["service"])
    async def prometheus() -> Response:
        return Response(exposition(metrics), media_type=CONTENT_TYPE_LATEST)


def _add_routes(app: FastAPI, settings: ServeSettings) -> None:
    """The web page and every API route, in the order they are matched (a route that a broader path would
    match goes before it), then :func:`~serve.api.routes.add_early_routes`."""
    mount_web(app)  # `/` and /static: before /{ct}/{c}, which would match /static/x
    app.include_router(gaps_router(settings))  # /web/gaps: before /{ct}/{c} too
    # before the log routes: /{ct}/{c}/{ut}/{u}/random would otherwise match /{ct}/{c}/{y}/{m}/{d}
    app.include_router(optout_api.router, tags=["consent"])  # before /{ct}/{c}, which matches /admin/optout
    app.include_router(recent.router)
    app.include_router(live.live_router(), tags=["live"])  # Kafka settings read when the app starts
    app.include_router(namehistory.router, tags=["names"])  # before /{ct}/{c}
    app.include_router(capabilities.router, tags=["service"])
    app.include_router(random.router, tags=["logs"])
    app.include_router(search_router(settings), tags=["search"])
    app.include_router(stats.router, tags=["stats"])
    app.include_router(router, tags=["logs"])
    add_early_routes(app)  # copies of the most asked log routes, tried first: once every route is in


def _add_docs(app: FastAPI) -> None:
    import swagger_ui_bundle  # type: ignore[import-untyped]

    app.mount("/docs/assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/swagger.json", include_in_schema=False)
    async def swagger_json() -> JSONResponse:
        return JSONResponse(openapi30.downgrade(app.openapi()))

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/swagger.json",  # the 3.0 dialect: the bundled Swagger UI 4 cannot read 3.1
            title="chatlog: API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )
