"""``chatlog serve``: the justlog/rustlog HTTP API on the logs in Cassandra (:mod:`serve.api`), in this
process or on several worker processes (:mod:`serve.api.workers`)."""

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
        workers: Annotated[
            int | None,
            typer.Option(
                help="Processes answering requests (CHATLOG_SERVE_WORKERS); 0: one per CPU (the default), "
                "1: this process alone."
            ),
        ] = None,
    ) -> None:
        """Serve the logs over HTTP (justlog/rustlog API, /docs, /metrics, /health) until stopped."""
        import uvicorn

        from consent.settings import ConsentSettings
        from core.cql import quiet_driver_logs
        from core.listen import check_listen
        from core.settings import KEYSPACE_OPTION, load
        from serve.api.app import create_app, open_store
        from serve.api.workers import serve_on_workers, uvicorn_options
        from serve.consent import preflight
        from serve.settings import FreshSettings, ServeSettings

        settings = load(
            ServeSettings,
            serve_host=host,
            serve_port=port,
            cassandra_keyspace=keyspace,
            serve_workers=workers,
            options={
                "serve_host": "--host",
                "serve_port": "--port",
                "serve_workers": "--workers",
                **KEYSPACE_OPTION,
            },
        )
        where = "--host/--port, CHATLOG_SERVE_HOST/CHATLOG_SERVE_PORT"
        check_listen(settings.serve_host, settings.serve_port, where)  # not uvicorn's lines, after connecting
        consent = load(ConsentSettings)
        fresh = load(FreshSettings)
        preflight(consent)  # the opt-out registry readable: one line when it is not, before the server
        quiet_driver_logs()  # a failure to connect is reported in one line, not as the driver's tracebacks
        cluster, store = open_store(settings)  # Cassandra answers: one line when it does not
        count = settings.worker_count()
        if count > 1:
            cluster.shutdown()  # each worker opens its own session
            serve_on_workers(settings, count)
            return
        try:
            asgi = create_app(settings, store, consent=consent, fresh=fresh, freeze=True)
            uvicorn.run(asgi, **uvicorn_options(settings))
        finally:
            cluster.shutdown()
