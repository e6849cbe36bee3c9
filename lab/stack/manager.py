"""``chatlog stack up / down / status``: start, check and stop the local services by pid.

``nodes=1`` (the default) is the single-node stack; more is the multi-node stack of
``lab/stack/cluster.py``, with its own ports, addresses and state directory."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.errors import StackError
from core.kafka_admin import ensure_topics
from core.settings import StackSettings
from lab.stack import process, security
from lab.stack.cluster import Layout
from lab.stack.services import Service, all_services
from store.schema import apply_schema

Report = Callable[[str], None]


@dataclass(frozen=True)
class ServiceState:
    name: str
    pid: int | None
    port: int
    answering: bool
    rss_mib: float | None
    host: str = "127.0.0.1"

    @property
    def state(self) -> str:
        if self.pid is None:
            return "stopped" if not self.answering else "foreign"
        return "up" if self.answering else "starting"


def _check_ports_free(svc: Service) -> None:
    for port in svc.ports:
        if process.port_open(port, svc.host):
            where = str(port) if svc.host == "127.0.0.1" else f"{svc.host}:{port}"
            raise StackError(
                f"port {where} for {svc.name} is taken by another process (not started by chatlog); "
                f"stop it or choose another port (CHATLOG_*_PORT)"
            )


def _services(settings: StackSettings, nodes: int) -> list[Service]:
    return all_services(settings) if nodes == 1 else Layout(settings, nodes).services()


def _spawn(svc: Service) -> int:
    return process.spawn(
        svc.command(),
        log_file=svc.log_file,
        pid_file=svc.pid_file,
        env=svc.env(),
        cwd=svc.home,
        timer_slack_ns=svc.timer_slack_ns,
    )


def up(settings: StackSettings, report: Report = print, *, nodes: int = 1) -> list[ServiceState]:
    """Start whatever is not running, wait until every service answers, then create topics and CQL.
    With ``nodes`` > 1, the multi-node stack: each group of services starts once the one before answers,
    and it is up when the quorum, the ring and the Spark workers have formed."""
    if nodes != 1:
        return _cluster_up(Layout(settings, nodes), report)
    _start_group(all_services(settings), settings.start_timeout_s, report)
    _kafka_sasl(settings, report)
    created = ensure_topics(settings)
    report(f"kafka: topics created: {', '.join(created) if created else 'none (all exist)'}")
    n = apply_schema(settings)
    report(f"cassandra: schema applied to keyspace {settings.cassandra_keyspace} ({n} statements)")
    return status(settings)


def _start_group(services: list[Service], timeout: float, report: Report) -> None:
    for svc in services:
        if process.read_pid(svc.pid_file) is not None:
            report(f"{svc.name}: already running")
            continue
        _check_ports_free(svc)
        svc.prepare()
        pid = _spawn(svc)
        report(f"{svc.name}: started (pid {pid}, log {svc.log_file})")
    for svc in services:
        _wait_ready(svc, timeout, report)


def _cluster_up(layout: Layout, report: Report) -> list[ServiceState]:
    timeout = layout.settings.start_timeout_s
    for group in layout.start_groups():
        _start_group(group, timeout, report)
    layout.wait_formed(timeout, report)
    clients = layout.client_settings()
    created = ensure_topics(clients)
    report(
        f"kafka: topics (RF {clients.topic_replication_factor}) created: "
        f"{', '.join(created) if created else 'none (all exist)'}"
    )
    n = apply_schema(clients)
    report(
        f"cassandra: schema applied to keyspace {clients.cassandra_keyspace} "
        f"({clients.cassandra_replication}, {n} statements)"
    )
    return status(layout.settings, nodes=layout.nodes)


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
    pid = _spawn(svc)
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


def status(settings: StackSettings, *, nodes: int = 1) -> list[ServiceState]:
    states = []
    for svc in _services(settings, nodes):
        pid = process.read_pid(svc.pid_file)
        answering = svc.ready() if (pid is not None or process.port_open(svc.ports[0], svc.host)) else False
        if nodes != 1 and pid is not None and not answering:  # nine JVMs on a busy machine: ask again
            time.sleep(1)
            answering = svc.ready()
        states.append(
            ServiceState(
                svc.name, pid, svc.ports[0], answering, process.rss_mib(pid) if pid else None, svc.host
            )
        )
    return states


def down(settings: StackSettings, *, purge: bool = False, report: Report = print, nodes: int = 1) -> None:
    """Stop what ``up`` started (by pid, in reverse order); keep data unless ``purge``."""
    if nodes != 1:
        _cluster_down(Layout(settings, nodes), purge=purge, report=report)
        return
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


def _cluster_down(layout: Layout, *, purge: bool, report: Report) -> None:
    """Each group stopped at once (SIGTERM, SIGKILL after its time), then the cluster's state if ``purge``."""
    for group, timeout in layout.stop_groups():
        running = {svc.name: pid for svc in group if (pid := process.read_pid(svc.pid_file)) is not None}
        process.stop_all(list(running.values()), timeout=timeout)
        for svc in group:
            pid = running.get(svc.name)
            report(f"{svc.name}: stopped (pid {pid})" if pid else f"{svc.name}: not running")
            svc.pid_file.unlink(missing_ok=True)
    directory = layout.settings.cluster_dir
    if purge and directory.exists():
        shutil.rmtree(directory)
        report(f"purged {directory}")


def _service(settings: StackSettings, name: str, nodes: int = 1) -> Service:
    services = _services(settings, nodes)
    for svc in services:
        if svc.name == name:
            return svc
    raise StackError(f"unknown service {name!r}; one of: {', '.join(s.name for s in services)}")


def service_log(settings: StackSettings, name: str, *, nodes: int = 1) -> str:
    return str(_service(settings, name, nodes).log_file)


def stop_service(settings: StackSettings, name: str, *, kill: bool = False, nodes: int = 1) -> None:
    """Stop one service (SIGTERM, or SIGKILL with ``kill``); ``up`` starts it again. For fault injection."""
    import os
    import signal

    svc = _service(settings, name, nodes)
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
