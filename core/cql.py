"""Cassandra sessions (cassandra-driver): connecting, TLS, logins refused, and their failures in one line."""

from __future__ import annotations

import logging
import socket
import ssl
from typing import Any

from core.errors import ChatlogError, one_line
from core.settings import CassandraSettings, tls_context


def connect(
    settings: CassandraSettings,
    *,
    keyspace: str | None = None,
    timeout: float = 10.0,
    protocol_version: int = 5,
    **cluster_kwargs: Any,
) -> tuple[Any, Any]:
    """A token-aware, DC-aware (cluster, session) pair for ``settings``; raise on failure.

    Its sockets send at once (``TCP_NODELAY``; the driver leaves Nagle's algorithm on): otherwise an unlogged
    batch of block rows of a few KB waits for the node's delayed ACK, 40 ms on Linux (measured here: a batch
    of two 8 KB rows 44 ms against 0.5 ms)."""
    from cassandra import ConsistencyLevel
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

    login = settings.cassandra_login
    auth = None if login is None else PlainTextAuthProvider(*login)
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=settings.cassandra_local_dc)),
        request_timeout=timeout,
        consistency_level=ConsistencyLevel.name_to_value[settings.cassandra_consistency],
    )
    cluster = Cluster(
        settings.contact_points,
        port=settings.cassandra_port,
        auth_provider=auth,
        ssl_context=ssl_context(settings),
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=timeout,
        protocol_version=protocol_version,
        **{"sockopts": [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)], **cluster_kwargs},
    )
    try:
        session = cluster.connect(keyspace)
    except Exception as exc:
        elsewhere = _no_local_host(cluster, settings)
        cluster.shutdown()
        refused = login_refused(settings, exc)
        if refused is not None:
            raise CassandraLoginError(refused) from None
        if elsewhere is not None:
            raise ChatlogError(elsewhere) from None
        raise
    elsewhere = _no_local_host(cluster, settings)
    if elsewhere is not None:  # connected, but every query would find no host to go to
        cluster.shutdown()
        raise ChatlogError(elsewhere)
    return cluster, session


def pin_to_node(cluster: Any, address: str, consistency: str, timeout: float = 10.0) -> str:
    """Add to ``cluster`` (from :func:`connect`) an execution profile whose requests have the node at
    ``address`` as their only coordinator, at ``consistency``; returns the profile's name. With ONE, a
    read answers with what that node itself holds (e.g. the rows it missed while down, once handed off)."""
    from cassandra import ConsistencyLevel
    from cassandra.cluster import ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    name = f"node-{address}-{consistency}"
    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([address]),
        request_timeout=timeout,
        consistency_level=ConsistencyLevel.name_to_value[consistency],
    )
    cluster.add_execution_profile(name, profile, pool_wait_timeout=timeout)
    return name


def _no_local_host(cluster: Any, settings: CassandraSettings) -> str | None:
    """One line when the cluster answered but none of its hosts is in the local data center (the driver
    then has no host to send a query to, and says only "no host available"), else None."""
    try:
        centers = {host.datacenter for host in cluster.metadata.all_hosts()} - {None}
    except Exception:  # no metadata: the cluster did not answer at all
        return None
    if not centers or settings.cassandra_local_dc in centers:
        return None
    return (
        f"no host of Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port} is in data center "
        f"{settings.cassandra_local_dc!r} (CHATLOG_CASSANDRA_LOCAL_DC); its data centers: "
        + ", ".join(sorted(centers))
    )


class CassandraLoginError(ChatlogError):
    """Cassandra refused the login (no, or wrong, user name and password); retrying will not help."""


def ssl_context(settings: CassandraSettings) -> ssl.SSLContext | None:
    """The TLS context of ``settings`` (None without TLS): the CA file, else the system's CAs."""
    if not settings.cassandra_uses_tls:
        return None
    return tls_context(
        settings.cassandra_ssl_ca_location,
        check_hostname=settings.cassandra_ssl_check_hostname,
        certificate=settings.cassandra_ssl_certificate_location,
        key=settings.cassandra_ssl_key_location,
        key_password=settings.cassandra_ssl_key_password,
    )


def login_refused(settings: CassandraSettings, exc: BaseException) -> str | None:
    """One line when ``exc`` (from ``Cluster.connect``) is Cassandra refusing the login, else None."""
    from cassandra import AuthenticationFailed
    from cassandra.cluster import NoHostAvailable

    errors = (
        list(exc.errors.values())
        if isinstance(exc, NoHostAvailable) and isinstance(exc.errors, dict)
        else [exc]
    )
    failed = [e for e in errors if isinstance(e, AuthenticationFailed)]
    if not failed or len(failed) != len(errors):
        return None
    where = f"Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port}"
    if settings.cassandra_username is None or settings.cassandra_password is None:
        return f"{where} requires a login: set CHATLOG_CASSANDRA_USERNAME and CHATLOG_CASSANDRA_PASSWORD"
    reason = "bad credentials" if "credentials" in str(failed[0]).lower() else one_line(failed[0])
    return (
        f"{where} refused the login of user {settings.cassandra_username!r} ({reason}): check "
        "CHATLOG_CASSANDRA_USERNAME and CHATLOG_CASSANDRA_PASSWORD"
    )


class _OneLine(logging.Filter):
    """A driver log record with its exception as one line at the end of its message, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {one_line(exc, 300, typed=True)}"
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


def refusal_reason(exc: BaseException) -> str:
    """What Cassandra said when it refused a statement (an ``InvalidRequest``: a missing table, a bad
    value), without the driver's wrapping (``Error from server: code=2200 [Invalid query] message="..."``)."""
    return str(exc).split("message=")[-1].strip('"')


def one_line_driver_logs() -> None:
    """For services (the sink's workers): the driver's warnings stay, each in one line (a Cassandra that
    went away is a reconnection attempt every few seconds, each logged with a traceback otherwise)."""
    import cassandra.cluster  # noqa: F401 - the driver's loggers exist once its modules are imported

    names = [n for n in logging.Logger.manager.loggerDict if n == "cassandra" or n.startswith("cassandra.")]
    for name in names:
        driver_log = logging.getLogger(name)
        if not any(isinstance(f, _OneLine) for f in driver_log.filters):
            driver_log.addFilter(_OneLine())


def quiet_driver_logs() -> None:
    """For one-shot commands: the driver logs each failed connection attempt with a traceback, and
    server warnings, at WARNING; the command reports a failure itself, in one line."""
    logging.getLogger("cassandra").setLevel(logging.CRITICAL)


def open_session(settings: CassandraSettings, **kwargs: Any) -> tuple[Any, Any]:
    """:func:`connect` for a command or a service: any failure becomes one :class:`ChatlogError` line
    naming the settings (:func:`connect_failure`), never a driver traceback."""
    try:
        return connect(settings, **kwargs)
    except ChatlogError:
        raise
    except Exception as exc:  # the driver raises several kinds
        raise ChatlogError(connect_failure(settings, exc)) from None


def connect_failure(settings: CassandraSettings, exc: BaseException) -> str:
    """One line naming the settings for ``exc`` from :func:`connect` (a missing keyspace, or no host)."""
    from cassandra import InvalidRequest
    from cassandra.cluster import NoHostAvailable

    where = f"Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port}"
    if isinstance(exc, InvalidRequest | NoHostAvailable) and (
        "does not exist" in str(exc) or "using keyspace" in str(exc)
    ):  # connect(keyspace) to a missing keyspace: NoHostAvailable("... using keyspace 'x'", [hosts])
        return (
            f"keyspace {settings.cassandra_keyspace} does not exist in {where} (CHATLOG_CASSANDRA_KEYSPACE; "
            "`chatlog init` creates it)"
        )
    errors = [exc]
    if isinstance(exc, NoHostAvailable) and isinstance(exc.errors, dict) and exc.errors:
        errors = list(exc.errors.values())
    reason = getattr(errors[0], "strerror", None) or one_line(errors[0])
    return f"{where} is not reachable (CHATLOG_CASSANDRA_HOSTS, CHATLOG_CASSANDRA_PORT): {reason}"
