"""``chatlog serve``: the justlog/rustlog HTTP API on the logs in Cassandra (:mod:`serve.api`)."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""

    @app.command("serve")
    def serve_command(
        host: Annotated[str | None, typer.Option(help="Listen address (CHATLOG_SERVE_HOST).")] = None,
        port: Annotated[int | None, typer.Option(help="Listen port (CHATLOG_SERVE_PORT).")] = None,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
    ) -> None:
        """Serve the logs over HTTP (justlog/rustlog API, /docs, /metrics, /health) until stopped."""
        import uvicorn

        from consent.settings import ConsentSettings
        from core.cql import quiet_driver_logs
        from core.listen import check_listen
        from core.settings import KEYSPACE_OPTION, load
        from serve.api.app import create_app, open_store
        from serve.consent import preflight
        from serve.settings import FreshSettings, ServeSettings

        settings = load(
            ServeSettings,
            serve_host=host,
            serve_port=port,
            cassandra_keyspace=keyspace,
            options={"serve_host": "--host", "serve_port": "--port", **KEYSPACE_OPTION},
        )
        where = "--host/--port, CHATLOG_SERVE_HOST/CHATLOG_SERVE_PORT"
        check_listen(settings.serve_host, settings.serve_port, where)  # not uvicorn's lines, after connecting
        consent = load(ConsentSettings)
        fresh = load(FreshSettings)
        preflight(consent)  # the opt-out registry readable: one line when it is not, before the server
        quiet_driver_logs()  # a failure to connect is reported in one line, not as the driver's tracebacks
        cluster, store = open_store(settings)
        try:
            uvicorn.run(
                create_app(settings, store, consent=consent, fresh=fresh),
                host=settings.serve_host,
                port=settings.serve_port,
                log_level=settings.serve_log_level,
                proxy_headers=True,
                timeout_graceful_shutdown=30,
            )
        finally:
            cluster.shutdown()
