"""The services of the local stack: how each is prepared, started and checked.

The single-node stack runs one of each (:func:`all_services`); the multi-node stack
(``lab/stack/cluster.py``) runs several Kafka and Cassandra nodes, each one of these with its own
settings, plus Spark (``lab/stack/spark.py``)."""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from core import maven
from core.errors import StackError
from core.settings import StackSettings
from lab.stack import security

JAVA17_FLAGS = [
    "-Djdk.attach.allowAttachSelf=true",
    *[
        f"--add-exports={m}=ALL-UNNAMED"
        for m in (
            "java.base/jdk.internal.misc",
            "java.base/jdk.internal.ref",
            "java.base/sun.nio.ch",
            "java.management.rmi/com.sun.jmx.remote.internal.rmi",
            "java.rmi/sun.rmi.registry",
            "java.rmi/sun.rmi.server",
            "java.sql/java.sql",
            "java.base/java.lang.ref",
            "jdk.unsupported/sun.misc",
            "jdk.compiler/com.sun.tools.javac.file",
            "jdk.attach/sun.tools.attach",
        )
    ],
    *[
        f"--add-opens={m}=ALL-UNNAMED"
        for m in (
            "java.base/java.lang.module",
            "java.base/jdk.internal.loader",
            "java.base/jdk.internal.ref",
            "java.base/jdk.internal.reflect",
            "java.base/jdk.internal.math",
            "java.base/jdk.internal.module",
            "java.base/jdk.internal.util.jar",
            "jdk.management/com.sun.management.internal",
            "java.base/sun.nio.ch",
            "java.base/java.io",
            "java.base/java.nio",
            "java.base/java.lang.reflect",
            "jdk.compiler/com.sun.tools.javac",
            "java.base/java.lang",
            "java.base/java.util",
            "java.base/java.util.concurrent",
            "java.base/java.util.concurrent.atomic",
            "java.base/java.net",
        )
    ],
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
]


def _template(name: str) -> str:
    return resources.files("lab.stack").joinpath("templates").joinpath(name).read_text()


def java() -> str:
    path = shutil.which("java")
    if path is None:
        raise StackError("Java is not on PATH: install OpenJDK 17 (apt-get install openjdk-17-jre-headless)")
    return path


def new_cluster_id() -> str:
    """A random KRaft cluster id: 16 bytes, URL-safe base64 without padding.

    Like Kafka's own ``Uuid.randomUuid`` it never starts with ``-``, which a command line would
    take for an option (``kafka-storage: error: argument --cluster-id/-t: expected one argument``).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class Service(ABC):
    """One service of the stack, with its files under ``<state_dir>/<name>``."""

    settings: StackSettings
    name: str = ""

    @property
    def home(self) -> Path:
        return self.settings.state_dir / self.name

    @property
    def log_file(self) -> Path:
        return self.settings.state_dir / "logs" / f"{self.name}.log"

    @property
    def pid_file(self) -> Path:
        return self.settings.state_dir / "run" / f"{self.name}.pid"

    @property
    def host(self) -> str:
        """The address the service listens on."""
        return "127.0.0.1"

    @property
    @abstractmethod
    def ports(self) -> tuple[int, ...]:
        """Ports the service listens on; the first one is the one clients use."""

    def env(self) -> dict[str, str]:
        """Environment variables the command needs besides this process's own."""
        return {}

    @property
    def timer_slack_ns(self) -> int | None:
        """How late the kernel may fire the process's timers (prctl PR_SET_TIMERSLACK), if not the default
        50 µs."""
        return None

    @abstractmethod
    def prepare(self) -> None:
        """Write config files, format storage: whatever must exist before the first start."""

    @abstractmethod
    def command(self) -> list[str]:
        """The command line that runs the service in the foreground."""

    @abstractmethod
    def ready(self) -> bool:
        """True when the service really answers (a request, not just an open port)."""


@dataclass
class Kafka(Service):
    """A broker that is also a KRaft controller: the single stack's (a quorum of one, formatted
    ``--standalone``), or node ``node_id`` of a static quorum of ``voters`` (``1@host:port,...``) whose
    nodes are all formatted with the cluster id kept in ``cluster_id_file``."""

    name: str = "kafka"
    node_id: int = 1
    voters: str = ""
    cluster_id_file: Path | None = None
    internal_replicas: int = 1  # of the offsets, transaction and share-state topics
    broker_defaults: str = ""  # more server.properties lines (e.g. default.replication.factor)

    @property
    def ports(self) -> tuple[int, ...]:
        sasl = (self.settings.kafka_sasl_ssl_port,) if self.settings.kafka_sasl_ssl_port else ()
        return (self.settings.kafka_port, self.settings.kafka_controller_port, *sasl)

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    def prepare(self) -> None:
        maven.fetch(maven.KAFKA, self.settings.cache_dir)
        data = self.home / "data"
        self.home.mkdir(parents=True, exist_ok=True)
        listeners = protocols = extra = ""
        if self.settings.kafka_sasl_ssl_port:
            listeners = f",SASL_SSL://127.0.0.1:{self.settings.kafka_sasl_ssl_port}"
            protocols = ",SASL_SSL:SASL_SSL"
            tls = security.ensure_tls(security.tls_dir(self.settings))
            extra = security.kafka_listener_config(self.settings, tls)
        quorum = f"controller.quorum.bootstrap.servers=127.0.0.1:{self.settings.kafka_controller_port}"
        if self.voters:
            quorum = f"controller.quorum.voters={self.voters}"
        self.config_file.touch(mode=0o600)  # it holds the dev keystore and PLAIN passwords
        self.config_file.chmod(0o600)
        self.config_file.write_text(
            _template("kafka.properties").format(
                port=self.settings.kafka_port,
                controller_port=self.settings.kafka_controller_port,
                node_id=self.node_id,
                quorum=quorum,
                internal_replicas=self.internal_replicas,
                internal_min_isr=min(2, self.internal_replicas),
                data_dir=data,
                session_timeout_ms=self.settings.kafka_group_session_timeout_ms,
                extra_listeners=listeners,
                extra_protocols=protocols,
                extra_config=extra + self.broker_defaults,
            )
        )
        (self.home / "log4j2.properties").write_text(
            _template("kafka-log4j2.properties").format(log_file=self.log_file)
        )
        if (data / "meta.properties").exists():
            return
        proc = subprocess.run(
            [
                *self._java(),
                "kafka.tools.StorageTool",
                "format",
                *([] if self.voters else ["--standalone"]),
                f"--cluster-id={self._cluster_id()}",
                "-c",
                str(self.config_file),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise StackError(f"formatting Kafka storage in {data} failed: {last[0]}")

    def _cluster_id(self) -> str:
        """A new id for a quorum of one; the one id every node of a static quorum is formatted with."""
        if self.cluster_id_file is None:
            return new_cluster_id()
        if not self.cluster_id_file.exists():
            self.cluster_id_file.parent.mkdir(parents=True, exist_ok=True)
            self.cluster_id_file.write_text(new_cluster_id() + "\n")
        return self.cluster_id_file.read_text().strip()

    def _java(self) -> list[str]:
        return [
            java(),
            f"-Xms{self.settings.kafka_heap}",
            f"-Xmx{self.settings.kafka_heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            *self.settings.stack_java_args,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.log_file.parent}",
            "-cp",
            maven.KAFKA.classpath(self.settings.cache_dir),
        ]

    def command(self) -> list[str]:
        return [*self._java(), "kafka.Kafka", str(self.config_file)]

    def ready(self) -> bool:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{self.settings.kafka_port}",
                "socket.connection.setup.timeout.ms": 1000,
                "log_level": 0,
            }
        )
        try:
            meta = admin.list_topics(timeout=2)
        except Exception:
            return False
        return bool(meta.brokers)


@dataclass
class Cassandra(Service):
    """The stack's Cassandra (AllowAllAuthenticator, no TLS); with ``password_auth`` and ``tls``, a node
    that wants a login (default superuser cassandra/cassandra) over TLS only, e.g. for a test."""

    name: str = "cassandra"
    password_auth: bool = False
    tls: security.TlsFiles | None = None
    address: str = "127.0.0.1"  # listen and rpc address (a node of a ring: its own loopback address)
    seeds: str = ""  # default: this node alone
    cluster_name: str = "chatlog-dev"
    file_cache_size: str = "256MiB"
    node_options: str = ""  # more cassandra.yaml lines (e.g. auto_bootstrap)

    @property
    def host(self) -> str:
        return self.address

    @property
    def timer_slack_ns(self) -> int | None:
        # A request's worker threads (Native-Transport-Requests, ReadStage, MutationStage: one shared pool)
        # wait for the next task in sleeps of 10 µs for about 10 ms after each (SEPWorker.doWaitSpin): the
        # stack's slack (StackSettings.stack_cassandra_timer_slack_ns) trades their CPU for a lone request's
        # wait; 0 leaves the kernel's default, as deployed.
        return self.settings.stack_cassandra_timer_slack_ns or None

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.cassandra_port, self.settings.cassandra_storage_port)

    def prepare(self) -> None:
        maven.fetch(maven.CASSANDRA, self.settings.cache_dir)
        self.home.mkdir(parents=True, exist_ok=True)
        encryption = ""
        if self.tls is not None:
            encryption = (
                "client_encryption_options:\n  enabled: true\n  optional: false\n"
                f"  keystore: {self.tls.keystore}\n  keystore_password: {self.tls.keystore_password}\n"
                "  store_type: PKCS12\n  require_client_auth: false\n"
            )
        (self.home / "cassandra.yaml").write_text(
            _template("cassandra.yaml").format(
                port=self.settings.cassandra_port,
                storage_port=self.settings.cassandra_storage_port,
                cluster_name=self.cluster_name,
                seeds=self.seeds or f"{self.address}:{self.settings.cassandra_storage_port}",
                address=self.address,
                file_cache_size=self.file_cache_size,
                node_options=self.node_options,
                data_dir=self.home,
                authenticator="PasswordAuthenticator" if self.password_auth else "AllowAllAuthenticator",
                client_encryption=encryption,
            )
        )
        (self.home / "logback.xml").write_text(
            _template("cassandra-logback.xml").format(log_file=self.log_file)
        )

    def command(self) -> list[str]:
        lib = maven.CASSANDRA.lib_dir(self.settings.cache_dir)
        jamm = sorted(lib.glob("jamm-*.jar"))
        heap = self.settings.cassandra_heap
        return [
            java(),
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-Xss512k",
            "-XX:+UseG1GC",
            "-XX:+ParallelRefProcEnabled",
            "-XX:MaxTenuringThreshold=1",
            "-XX:G1HeapRegionSize=16m",
            "-XX:MaxGCPauseMillis=300",
            "-XX:MaxDirectMemorySize=768m",
            *self.settings.stack_java_args,
            *JAVA17_FLAGS,
            *([f"-javaagent:{jamm[0]}"] if jamm else []),
            f"-Dcassandra.config=file://{self.home / 'cassandra.yaml'}",
            f"-Dlogback.configurationFile={self.home / 'logback.xml'}",
            f"-Dcassandra.logdir={self.log_file.parent}",
            f"-Dcassandra.storagedir={self.home}",
            "-Dcassandra-foreground=yes",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            "-Dcassandra.ring_delay_ms=1000",
            "-Dcassandra.superuser_setup_delay_ms=0",
            # the approximate clock is refreshed every 2 ms by default: ~500 wake-ups a second, a third of a
            # resting node's CPU here; 20 ms is finer than any timeout it serves
            "-Dcassandra.approximate_time_precision_ms=20",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            maven.CASSANDRA.classpath(self.settings.cache_dir),
            "org.apache.cassandra.service.CassandraDaemon",
        ]

    def ready(self) -> bool:
        from lab.stack.process import port_open

        if not port_open(self.settings.cassandra_port, self.address):
            return False

        rows = node_query(self.settings, self.address, "SELECT release_version FROM system.local")
        return bool(rows)


def node_query(settings: StackSettings, address: str, query: str, timeout: float = 3.0) -> list[Any] | None:
    """The rows of ``query`` with the Cassandra node at ``address`` as its coordinator (not another node of
    its ring), at the settings' consistency level, or None when it does not answer within ``timeout``."""
    from core.cql import connect, pin_to_node

    try:
        cluster, session = connect(
            settings.model_copy(update={"cassandra_hosts": address}), keyspace=None, timeout=timeout
        )
    except Exception:
        return None
    try:
        node = pin_to_node(cluster, address, settings.cassandra_consistency, timeout)
        return list(session.execute(query, execution_profile=node))
    except Exception:
        return None
    finally:
        cluster.shutdown()


@dataclass
class InspIRCd(Service):
    name: str = "inspircd"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.irc_port,)

    def prepare(self) -> None:
        if shutil.which("inspircd") is None and not Path("/usr/sbin/inspircd").exists():
            raise StackError("InspIRCd is not installed: run `make setup` (apt-get install inspircd)")
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "inspircd.conf").write_text(
            _template("inspircd.conf").format(port=self.settings.irc_port, data_dir=self.home)
        )
        (self.home / "inspircd.motd").write_text("chatlog dev IRC server\n")

    def command(self) -> list[str]:
        binary = shutil.which("inspircd") or "/usr/sbin/inspircd"
        return [binary, f"--config={self.home / 'inspircd.conf'}", "--nofork", "--runasroot", "--nopid"]

    def ready(self) -> bool:
        return irc_registers("127.0.0.1", self.settings.irc_port)


def irc_registers(host: str, port: int, timeout: float = 3.0) -> bool:
    """True when the server completes a registration (numeric 001) for a throw-away nick."""
    nick = f"probe{uuid.uuid4().hex[:8]}"
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :probe\r\n".encode())
            buf = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = sock.recv(4096)
                if not chunk:
                    return False
                buf += chunk
                for line in buf.split(b"\r\n"):
                    parts = line.split(b" ")
                    if len(parts) > 1 and parts[1] == b"001":
                        sock.sendall(b"QUIT :probe\r\n")
                        return True
                    if parts and parts[0] == b"PING":
                        sock.sendall(b"PONG " + b" ".join(parts[1:]) + b"\r\n")
    except OSError:
        return False
    return False


def all_services(settings: StackSettings) -> list[Service]:
    return [Kafka(settings), Cassandra(settings), InspIRCd(settings)]
