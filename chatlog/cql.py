"""Cassandra sessions (cassandra-driver) and applying the schema of ``schemas/cassandra.cql``."""

from __future__ import annotations

from typing import Any

from chatlog.errors import ChatlogError
from chatlog.settings import CassandraSettings
from schemas import cql


def connect(
    settings: CassandraSettings,
    *,
    keyspace: str | None = None,
    timeout: float = 10.0,
    protocol_version: int = 5,
    **cluster_kwargs: Any,
) -> tuple[Any, Any]:
    """A token-aware, DC-aware (cluster, session) pair for ``settings``; raise on failure."""
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

    auth = None
    if settings.cassandra_username and settings.cassandra_password is not None:
        auth = PlainTextAuthProvider(
            settings.cassandra_username, settings.cassandra_password.get_secret_value()
        )
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=settings.cassandra_local_dc)),
        request_timeout=timeout,
    )
    cluster = Cluster(
        settings.contact_points,
        port=settings.cassandra_port,
        auth_provider=auth,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=timeout,
        protocol_version=protocol_version,
        **cluster_kwargs,
    )
    try:
        session = cluster.connect(keyspace)
    except Exception:
        cluster.shutdown()
        raise
    return cluster, session


def apply_schema(settings: CassandraSettings, keyspace: str | None = None) -> int:
    """Create the keyspace and tables if missing; returns how many statements ran."""
    ks = keyspace or settings.cassandra_keyspace
    try:
        cluster, session = connect(settings, timeout=30)
    except Exception as exc:
        raise ChatlogError(
            f"cannot reach Cassandra at {settings.cassandra_hosts}:{settings.cassandra_port}: {exc}"
        ) from None
    try:
        stmts = cql.statements(ks, settings.cassandra_replication)
        for stmt in stmts:
            session.execute(stmt, timeout=60)
        return len(stmts)
    finally:
        cluster.shutdown()
