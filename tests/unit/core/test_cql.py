"""core/cql.py: the Cassandra driver's TLS context and the one-line refusals of a login."""

from __future__ import annotations

import ssl
from typing import Any

from core.settings import CassandraSettings, load
from lab.stack.security import TlsFiles
from tests.unit.core.tls_settings import SECRET


def cassandra(files: TlsFiles | None = None, **kw: Any) -> CassandraSettings:
    ca: dict[str, Any] = {"cassandra_ssl_ca_location": str(files.ca)} if files is not None else {}
    return load(CassandraSettings, **ca, **kw)


def test_cassandra_tls_context(stack_tls: TlsFiles) -> None:
    from core.cql import ssl_context

    assert ssl_context(cassandra()) is None
    context = ssl_context(cassandra(stack_tls))
    assert context is not None and context.check_hostname and context.get_ca_certs()
    system = ssl_context(cassandra(cassandra_ssl=True))
    assert system is not None and system.verify_mode == ssl.CERT_REQUIRED
    unchecked = ssl_context(cassandra(stack_tls, cassandra_ssl_check_hostname=False))
    assert unchecked is not None and unchecked.check_hostname is False


def test_cassandra_login_refusals_are_one_line() -> None:
    from cassandra import AuthenticationFailed
    from cassandra.cluster import NoHostAvailable

    from core.cql import login_refused

    required = NoHostAvailable(
        "x", {"127.0.0.1:9042": AuthenticationFailed("Remote end requires authentication")}
    )
    line = login_refused(cassandra(), required)
    assert line is not None and "CHATLOG_CASSANDRA_USERNAME" in line
    bad = AuthenticationFailed('Failed: code=0100 [Bad credentials] message="Provided username cassandra..."')
    line = login_refused(cassandra(cassandra_username="cassandra", cassandra_password=SECRET), bad)
    assert line is not None and "bad credentials" in line and SECRET not in line and "\n" not in line
    assert (
        login_refused(cassandra(), NoHostAvailable("x", {"h": ConnectionRefusedError(111, "refused")}))
        is None
    )


def test_a_local_data_center_no_host_is_in_is_named_with_the_ones_there() -> None:
    from types import SimpleNamespace

    from core.cql import _no_local_host

    def cluster(*centers: str | None) -> Any:
        hosts = [SimpleNamespace(datacenter=dc) for dc in centers]
        return SimpleNamespace(metadata=SimpleNamespace(all_hosts=lambda: hosts))

    wrong = load(CassandraSettings, cassandra_local_dc="nodc")
    assert _no_local_host(cluster("datacenter1", "dc2"), wrong) == (
        "no host of Cassandra at 127.0.0.1:9042 is in data center 'nodc' (CHATLOG_CASSANDRA_LOCAL_DC); "
        "its data centers: datacenter1, dc2"
    )
    right = load(CassandraSettings)  # datacenter1
    assert _no_local_host(cluster("datacenter1", "dc2"), right) is None
    assert _no_local_host(cluster(), wrong) is None  # no metadata yet: the cluster did not answer
    assert _no_local_host(cluster(None), wrong) is None


def test_the_drivers_warnings_are_one_line_each_in_a_service() -> None:
    import io
    import logging

    from core.cql import one_line_driver_logs

    one_line_driver_logs()
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root, driver = logging.getLogger(), logging.getLogger("cassandra")
    level = driver.level
    driver.setLevel(logging.WARNING)  # as in a sink worker (a command's quiet_driver_logs() may have run)
    root.addHandler(handler)
    try:
        try:
            raise ConnectionRefusedError(111, "Tried connecting to [('127.0.0.1', 9042)]")
        except ConnectionRefusedError:
            logging.getLogger("cassandra.pool").warning(
                "Error attempting to reconnect to %s", "127.0.0.1:9042", exc_info=True
            )
    finally:
        root.removeHandler(handler)
        driver.setLevel(level)
    assert out.getvalue() == (
        "Error attempting to reconnect to 127.0.0.1:9042: ConnectionRefusedError: "
        "[Errno 111] Tried connecting to [('127.0.0.1', 9042)]\n"
    )


def test_a_refusal_is_what_cassandra_said_without_the_drivers_wrapping() -> None:
    from cassandra import InvalidRequest

    from core.cql import refusal_reason

    exc = InvalidRequest('Error from server: code=2200 [Invalid query] message="table x.y does not exist"')
    assert refusal_reason(exc) == "table x.y does not exist"
    assert refusal_reason(ValueError("plain")) == "plain"
