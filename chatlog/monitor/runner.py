"""Start the monitor: preflight checks, metrics endpoint, then the faust worker until SIGINT/SIGTERM."""

from __future__ import annotations

import logging
from typing import Any

from chatlog.monitor import preflight
from chatlog.monitor.settings import MonitorSettings
from core.log_setup import LOG_FORMAT

log = logging.getLogger("chatlog.monitor")


def run(settings: MonitorSettings) -> None:
    """Blocks until the worker is stopped by a signal."""
    import faust

    from chatlog.monitor.app import Monitor

    preflight.check_codecs()
    preflight.check_port(settings.monitor_web_bind, settings.monitor_web_port, "CHATLOG_MONITOR_WEB_PORT")
    preflight.check_port(
        settings.monitor_metrics_host, settings.monitor_metrics_port, "CHATLOG_MONITOR_METRICS_PORT"
    )
    preflight.check_data_dir(settings)
    partitions = preflight.source_partitions(settings)
    preflight.ensure_changelogs(settings, partitions)
    monitor = Monitor(settings, partitions)
    monitor.metrics.serve(settings.monitor_metrics_host, settings.monitor_metrics_port)
    worker = faust.Worker(
        monitor.app,
        loglevel=settings.monitor_log_level,
        logging_config=logging_config(settings.monitor_log_level),
        quiet=True,
        redirect_stdouts=False,
    )
    worker.spinner = None  # faust draws a terminal spinner during start-up, even into log files
    log.info(
        "monitor %s: %s (%d buckets) and %s; GET http://%s:%d/coverage, metrics on :%d",
        settings.monitor_app_id,
        settings.topic_channels,
        partitions.channels,
        settings.topic_status,
        settings.monitor_web_bind,
        settings.monitor_web_port,
        settings.monitor_metrics_port,
    )
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise


def logging_config(library_level: str) -> dict[str, Any]:
    """What faust's worker installs: chatlog's format on stderr; faust, mode and aiokafka at their level."""
    level = library_level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": LOG_FORMAT}},
        "filters": {"secrets": {"()": "core.redact.SecretFilter"}},  # as chatlog's own handler has
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "filters": ["secrets"],
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": "INFO", "handlers": ["stderr"]},
        "loggers": {name: {"level": level} for name in ("faust", "mode", "aiokafka", "kafka")},
    }
