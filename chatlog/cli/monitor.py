"""``chatlog monitor``: the heartbeat monitor as a command."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``monitor`` to ``app``."""

    @app.command()
    def monitor(
        web_port: Annotated[
            int | None, typer.Option(help="GET /coverage port [CHATLOG_MONITOR_WEB_PORT].")
        ] = None,
        metrics_port: Annotated[
            int | None, typer.Option(help="Prometheus port [CHATLOG_MONITOR_METRICS_PORT].")
        ] = None,
        stale: Annotated[
            float | None,
            typer.Option(help="Seconds after which a heartbeat is dead [CHATLOG_MONITOR_STALE_S]."),
        ] = None,
        interval: Annotated[
            float | None, typer.Option(help="Seconds between evaluations [CHATLOG_MONITOR_INTERVAL_S].")
        ] = None,
        replicas: Annotated[
            int | None, typer.Option(help="Replicas 0..N-1 always reported [CHATLOG_MONITOR_REPLICAS].")
        ] = None,
        app_id: Annotated[
            str | None, typer.Option(help="faust app id / consumer group [CHATLOG_MONITOR_APP_ID].")
        ] = None,
    ) -> None:
        """Watch the ingesters' heartbeats continuously (faust): per replica, the registered channels no live
        ingester confirms, since when, on /coverage and Prometheus. Its gaps are counted from these
        heartbeats, not from the coverage ledger that `chatlog status` and `chatlog coverage` read."""
        from chatlog.monitor.runner import run
        from chatlog.monitor.settings import MonitorSettings
        from core.settings import load

        settings = load(
            MonitorSettings,
            monitor_web_port=web_port,
            monitor_metrics_port=metrics_port,
            monitor_stale_s=stale,
            monitor_interval_s=interval,
            monitor_replicas=replicas,
            monitor_app_id=app_id,
        )
        run(settings)
