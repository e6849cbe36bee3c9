"""``chatlog stack up / down / status``: start, check and stop the local services by pid."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass

from chatlog.stack import process, security
from chatlog.stack.services import Service, all_services
from core.cql import apply_schema
from core.errors import StackError
from core.kafka_admin import ensure_topics
from core.settings import StackSettings

Report = Callable[[str], None]


@dataclass(frozen=True)
class ServiceState:
    name: str
    pid: int | None
    port: int
    answering: bool
    rss_mib: float | None

    @property
    def state(self) -> str:
        if self.pid is None:
            return "stopped" if not self.answering else "foreign"
        return "up" if self.answering else "starting"


def _check_ports_free(svc: Service) -> None:
    for port in svc.ports:
        if process.port_open(port):
            raise StackError(
                f"port {port} for {svc.name} is taken by another process (not started by chatlog); "
                f"stop it or choose another port (CHATLOG_*_PORT)"
            )


def up(settings: StackSettings, report: Report = print) -> list[ServiceState]:
    """Start whatever is not running, wait until every service answers, then create topics and CQL."""
    services = all_services(settings)
    started: list[Service] = []
    for svc in services:
        if process.read_pid(svc.pid_file) is not None:
            report(f"{svc.name}: already running")
            continue
        _check_ports_free(svc)
        svc.prepare()
        pid = process.spawn(svc.command(), log_file=svc.log_file, pid_file=svc.pid_file, cwd=svc.home)
        report(f"{svc.name}: started (pid {pid}, log {svc.log_file})")
        started.append(svc)
    for svc in services:
        _wait_ready(svc, settings.start_timeout_s, report)
    _kafka_sasl(settings, report)
    created = ensure_topics(settings)
    report(f"kafka: topics created: {', '.join(created) if created else 'none (all exist)'}")
    n = apply_schema(settings)
    report(f"cassandra: schema applied to keyspace {settings.cassandra_keyspace} ({n} statements)")
    return status(settings)


def _kafka_sasl(settings: StackSettings, report: Report) -> None:
    """The SCRAM user of the SASL_SSL listener (created once; it lives in the KRaft metadata)."""
    port = settings.kafka_sasl_ssl_port
    if not port:
        return
    if not process.port_open(port):
        report(
            f"kafka: no SASL_SSL listener on 127.0.0.1:{port}: this broker was started without it; "
            "stop Kafka and run `chatlog stack up` again to add it"
        )
        return
    created = security.ensure_scram_user(settings)
    report(
        f"kafka: SASL_SSL on 127.0.0.1:{port}, user {security.SCRAM_USER}"
        f"{' (created)' if created else ''}, CA {security.TlsFiles(security.tls_dir(settings)).ca}"
    )


def start(svc: Service, timeout: float, report: Report = print) -> int:
    """Prepare and start one service and wait until it answers; returns its pid (e.g. a test's own
    Cassandra next to the stack's)."""
    _check_ports_free(svc)
    svc.prepare()
    pid = process.spawn(svc.command(), log_file=svc.log_file, pid_file=svc.pid_file, cwd=svc.home)
    report(f"{svc.name}: started (pid {pid}, log {svc.log_file})")
    try:
        _wait_ready(svc, timeout, report)
    except BaseException:
        process.stop(pid, timeout=30)
        raise
    return pid


def _wait_ready(svc: Service, timeout: float, report: Report) -> None:
    t0 = time.monotonic()
    while True:
        if svc.ready():
            report(f"{svc.name}: ready after {time.monotonic() - t0:.1f}s")
            return
        if process.read_pid(svc.pid_file) is None:
            last = process.last_error(svc.log_file)
            raise StackError(f"{svc.name} died during start; see {svc.log_file}: {last}")
        if time.monotonic() - t0 > timeout:
            raise StackError(f"{svc.name} did not answer within {timeout:.0f}s; see {svc.log_file}")
        time.sleep(0.5)


def status(settings: StackSettings) -> list[ServiceState]:
    states = []
    for svc in all_services(settings):
        pid = process.read_pid(svc.pid_file)
        answering = svc.ready() if (pid is not None or process.port_open(svc.ports[0])) else False
        states.append(
            ServiceState(svc.name, pid, svc.ports[0], answering, process.rss_mib(pid) if pid else None)
        )
    return states


def down(settings: StackSettings, *, purge: bool = False, report: Report = print) -> None:
    """Stop what ``up`` started (by pid, in reverse order); keep data unless ``purge``."""
    for svc in reversed(all_services(settings)):
        pid = process.read_pid(svc.pid_file)
        if pid is None:
            report(f"{svc.name}: not running")
        else:
            process.stop(pid, timeout=60)
            report(f"{svc.name}: stopped (pid {pid})")
        svc.pid_file.unlink(missing_ok=True)
    if purge and settings.state_dir.exists():
        shutil.rmtree(settings.state_dir)
        report(f"purged {settings.state_dir}")


def _service(settings: StackSettings, name: str) -> Service:
    for svc in all_services(settings):
        if svc.name == name:
            return svc
    raise StackError(f"unknown service {name!r}; one of: kafka, cassandra, inspircd")


def service_log(settings: StackSettings, name: str) -> str:
    return str(_service(settings, name).log_file)


def stop_service(settings: StackSettings, name: str, *, kill: bool = False) -> None:
    """Stop one service (SIGTERM, or SIGKILL with ``kill``); ``up`` starts it again. For fault injection."""
    import os
    import signal

    svc = _service(settings, name)
    pid = process.read_pid(svc.pid_file)
    if pid is None:
        return
    if kill:
        os.killpg(pid, signal.SIGKILL)
        while process.pid_alive(pid):
            process.stop(pid, timeout=1)
    else:
        process.stop(pid, timeout=60)
    svc.pid_file.unlink(missing_ok=True)
