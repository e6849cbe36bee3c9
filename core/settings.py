"""Typed settings read from ``CHATLOG_*`` environment variables: the base classes every service builds on.

Kafka, Cassandra, the IRC server and the local stack are defined here; each service adds its own class
on top (``ingest/settings.py``, ``ingest/irc/settings.py``, ``sink/settings.py``,
``chatlog/monitor/settings.py``). Every key has a description next to its default, and
``docs/settings.md``, generated from all the classes (``chatlog schema settings``), lists them in one
place. Flags on the command line override the environment. Secrets are ``SecretStr`` and never printed.
A wrong value raises :class:`SettingsError` in one line.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Self, TypeVar, get_args

from pydantic import Field, PositiveFloat, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.errors import SettingsError, one_line
from core.replication import normalize_replication
from core.settings_errors import describe

HOME_VARIABLE: Final = "CHATLOG_HOME"


def home_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``CHATLOG_HOME`` (``~`` expanded, made absolute), else the current working directory."""
    value = environ.get(HOME_VARIABLE, "").strip()
    return Path(value).expanduser().absolute() if value else Path.cwd()


CHATLOG_HOME: Final = home_dir()
"""Where relative defaults live (``.state/``, ``.cache/``, ``results/``), fixed when chatlog starts:
``CHATLOG_HOME``, else the working directory (``make`` runs in the checkout), never the installed code."""

PROJECT_ROOT: Final = CHATLOG_HOME
"""The same directory, under the name the services, the demo and the benchmarks import."""


MAX_TTL_S: Final = 630_720_000
"""Cassandra's largest TTL (20 years): a larger one fails every write."""
INT32_MAX: Final = 2**31 - 1
"""Largest value of an integer config of librdkafka or of Kafka's Java clients (sizes, timeouts in ms)."""
MAX_PARTITIONS: Final = 100_000
"""Most partitions of a topic librdkafka creates (``NewTopic``: 1..100000)."""
MAX_REPLICATION_FACTOR: Final = 10_000
"""Largest replication factor librdkafka creates a topic with (``NewTopic``: up to 10000)."""
Port = Annotated[int, Field(ge=1, le=65535)]
"""A TCP port a setting names."""
PortOrZero = Annotated[int, Field(ge=0, le=65535)]
"""A TCP port, or 0 (the setting's description says what 0 means: none, off, or any free port)."""
SETTINGS_CLASSES: list[type[BaseSettings]] = []
"""Every settings class imported so far; each adds itself. The operator layer imports every settings
module (``chatlog/cli/schema.py``), so there this is all of them."""


class _Base(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CHATLOG_",
        extra="ignore",
        frozen=True,
        allow_inf_nan=False,  # no `inf` timeout or rate
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        SETTINGS_CLASSES.append(cls)


PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""SASL mechanisms with a user and password: all chatlog clients (librdkafka, Spark, faust) speak them."""


Consistency = Literal["ONE", "LOCAL_ONE", "QUORUM", "LOCAL_QUORUM", "EACH_QUORUM", "ALL"]
"""Cassandra consistency levels chatlog reads and writes at (names of the driver's ``ConsistencyLevel``)."""


TOPIC_ROLES = ("channels", "messages", "deadletter", "status", "coverage", "optout")


def tls_context(
    ca: Path | None,
    *,
    check_hostname: bool,
    certificate: Path | None = None,
    key: Path | None = None,
    key_password: SecretStr | None = None,
    variables: str = "CHATLOG_CASSANDRA_SSL",
) -> ssl.SSLContext:
    """A client TLS context: the CA file (else the system's CAs), and a client certificate if given.
    A file that cannot be read or is not PEM is a :class:`SettingsError` naming its variable
    (``{variables}_CA_LOCATION`` ...), not a connection failure blamed on the hosts."""

    def unusable(names: tuple[str, ...], path: Path | None, exc: Exception) -> SettingsError:
        reason = one_line(getattr(exc, "strerror", None) or exc)
        settings = " / ".join(f"{variables}_{name}" for name in names)
        return SettingsError(f"{settings}: cannot use {path}: {reason}")

    try:
        context = ssl.create_default_context(cafile=str(ca) if ca is not None else None)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise unusable(("CA_LOCATION",), ca, exc) from None
    context.check_hostname = check_hostname
    if certificate is not None:

        def no_password() -> str:  # never OpenSSL's prompt on the terminal (a service would hang on it)
            raise ValueError(f"the key is encrypted: give its password in {variables}_KEY_PASSWORD")

        try:
            context.load_cert_chain(
                str(certificate),
                str(key) if key is not None else None,
                key_password.get_secret_value() if key_password is not None else no_password,
            )
        except ssl.SSLError as exc:
            reason = "wrong key password, or not a PEM key" if key_password is not None else exc
            raise unusable(
                ("CERTIFICATE_LOCATION", "KEY_LOCATION", "KEY_PASSWORD"), certificate, Exception(reason)
            ) from None
        except (OSError, ValueError) as exc:
            raise unusable(("CERTIFICATE_LOCATION", "KEY_LOCATION"), certificate, exc) from None
    return context


def _no_path(value: object) -> object:
    """An empty path (or key password) setting is not set (``Path("")`` would be the working directory)."""
    return None if isinstance(value, str) and not value.strip() else value


def _readable_file(path: Path | None) -> Path | None:
    """A TLS file that must be there: a missing or unreadable one is named with its variable here, not as
    a TLS library error at the first connection (librdkafka's say neither the file nor the setting)."""
    if path is None:
        return None
    if not path.is_file():
        raise ValueError("no such file" if not path.exists() else "not a file")
    if not os.access(path, os.R_OK):
        raise ValueError("not readable by this user")
    return path


def _key_needs_certificate(key: Path | None, certificate: Path | None, variables: str) -> None:
    """A client key alone is never used (it would be ignored, silently): it needs its certificate."""
    if key is not None and certificate is None:
        raise ValueError(f"{variables}_KEY_LOCATION is set without {variables}_CERTIFICATE_LOCATION")


def _host_port_list(value: str) -> str:
    """``host[:port][,host[:port]...]`` (each may start with ``proto://``): every port a number 1-65535."""
    parts = [p.strip() for p in value.split(",")]
    if not any(parts):
        raise ValueError("empty: give host:port[,host:port...]")
    for part in parts:
        address = part.split("://", 1)[-1].rpartition("@")[2]  # user:password@ (masked when printed)
        host, colon, port = address.rpartition(":")
        if not colon:  # no port: librdkafka's default, 9092
            host, port = address, "9092"
        if not host or any(c.isspace() for c in host) or not port.isascii() or not port.isdigit():
            raise ValueError(f"not host[:port]: {part[:80]!r}")
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"port {port} of {part[:80]!r} is not 1-65535")
    return value


def _bare_hosts(value: str) -> str:
    """Contact points without ports (the port is one setting for all): a ``host:port`` (not an IPv6
    address) is refused, as the driver would try ``host:port:9042``."""
    hosts = [h.strip() for h in value.split(",") if h.strip()]
    if not hosts:
        raise ValueError("empty: give one or more hosts, comma-separated")
    for host in hosts:
        if any(c.isspace() for c in host):
            raise ValueError("a host name has no spaces")
        if ":" in host:
            try:
                ipaddress.IPv6Address(host.strip("[]"))
            except ValueError:
                raise ValueError(
                    f"{host[:80]!r}: give hosts without ports (CHATLOG_CASSANDRA_PORT)"
                ) from None
    return value


_KAFKA_FILES: Final = ("kafka_ssl_ca_location", "kafka_ssl_certificate_location", "kafka_ssl_key_location")
_CASSANDRA_FILES: Final = (
    "cassandra_ssl_ca_location",
    "cassandra_ssl_certificate_location",
    "cassandra_ssl_key_location",
)
ClientKeyFile = Annotated[
    Path | None, Field(description="Private key (PEM) of the client certificate; default: none.")
]
"""The private key of a TLS client certificate (Kafka's, Cassandra's): a PEM file."""
ClientKeyPassword = Annotated[
    SecretStr | None, Field(description="Password of an encrypted client key (secret); default: none.")
]
"""The password of an encrypted :data:`ClientKeyFile`."""
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"]


class KafkaSettings(_Base):
    """Where Kafka is and what the topics are called."""

    kafka_bootstrap_servers: str = Field(default="127.0.0.1:9092", description="Kafka bootstrap servers.")
    kafka_security_protocol: SecurityProtocol = Field(
        default="PLAINTEXT",
        description="librdkafka security.protocol (any case): " + ", ".join(get_args(SecurityProtocol)),
    )
    kafka_sasl_mechanism: SaslMechanism | None = Field(
        default=None,
        description="librdkafka sasl.mechanism (any case): " + ", ".join(get_args(SaslMechanism)),
    )
    kafka_sasl_username: str | None = Field(default=None, description="SASL user name.")
    kafka_sasl_password: SecretStr | None = Field(default=None, description="SASL password (secret).")
    kafka_ssl_ca_location: Path | None = Field(
        default=None,
        description="PEM file of the CA(s) that signed the brokers' certificates (SSL, SASL_SSL); "
        "default: none, the system's trusted CAs.",
    )
    kafka_ssl_certificate_location: Path | None = Field(
        default=None, description="Client certificate (PEM) for brokers that require one; default: none."
    )
    kafka_ssl_key_location: ClientKeyFile = None
    kafka_ssl_key_password: ClientKeyPassword = None
    kafka_ssl_check_hostname: bool = Field(
        default=True, description="Check that the broker's certificate names the host connected to."
    )
    topic_channels: str = Field(default="chatlog.channels", description="Compacted channel registry topic.")
    topic_messages: str = Field(default="chatlog.messages", description="Keyed chat event topic.")
    topic_deadletter: str = Field(default="chatlog.deadletter", description="Records that could not be used.")
    topic_status: str = Field(default="chatlog.status", description="Ingester heartbeats.")
    topic_coverage: str = Field(
        default="chatlog.coverage", description="Per-channel coverage events (hand-off, ledger)."
    )
    topic_optout: str = Field(
        default="chatlog.optout",
        description="Compacted opt-out registry topic (keys user:<id>, channel:<id>, code:<code>).",
    )
    channel_buckets: int = Field(default=64, ge=1, le=10_000, description="Partitions of the channel topic.")
    messages_partitions: int = Field(
        default=12, ge=1, le=MAX_PARTITIONS, description="Partitions of the message topic; at most 100000."
    )
    topic_replication_factor: int = Field(
        default=1,
        ge=1,
        le=MAX_REPLICATION_FACTOR,
        description="Replication factor of created topics; at most 10000.",
    )
    messages_retention_ms: int = Field(default=7 * 24 * 3600 * 1000, ge=60_000, description="Replay window.")
    kafka_acks: Literal["all", "1"] = Field(
        default="all",
        description="acks of chatlog's producers: all (the record is in every in-sync replica, at least "
        "topic_min_insync_replicas of them, before it counts as written) or 1 (the leader only: a leader "
        "that dies right after can lose it). 1 needs CHATLOG_KAFKA_IDEMPOTENCE=false.",
    )
    kafka_idempotence: bool = Field(
        default=True,
        description="Idempotent producers: a retried send neither duplicates nor reorders a partition's "
        "records. Needs acks=all.",
    )
    kafka_producer_request_timeout_ms: int | None = Field(
        default=None,
        ge=1000,
        le=INT32_MAX,
        description="request.timeout.ms of chatlog's producers: how long a produce request waits for its "
        "broker (with acks=all, for the in-sync replicas too) before it is sent again, to the new leader "
        "once there is one. A broker that hangs (SIGSTOP, a stuck disk) keeps its connections open, so "
        "every partition it leads stands still until then. Unset: librdkafka's 30 s (`chatlog stack env "
        "--nodes 3` sets 5000: a cluster has another replica to turn to).",
    )
    kafka_producer_metadata_refresh_ms: int | None = Field(
        default=None,
        ge=1000,
        le=INT32_MAX,
        description="topic.metadata.refresh.interval.ms of chatlog's producers: how often they ask for the "
        "partitions' leaders, at least. A produce request that timed out on a hung leader is sent to the "
        "same broker again until a refresh names the new leader (a request timeout is no leader error): "
        "with librdkafka's 5 min the partitions of a broker that hung 30 s waited for it to resume, though "
        "the controller had fenced it after 5 s. Unset: librdkafka's 5 min (`chatlog stack env --nodes 3` "
        "sets 5000).",
    )
    topic_min_insync_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICATION_FACTOR,
        description="min.insync.replicas of created topics: how many replicas a write with acks=all "
        "needs; at most the replication factor. Default: 2 when the replication factor is 3 or more (one "
        "broker may be down), else the broker's own default (1).",
    )

    @field_validator("kafka_bootstrap_servers")
    @classmethod
    def _bootstrap(cls, value: str) -> str:
        return _host_port_list(value)

    @model_validator(mode="after")
    def _min_insync_within_replicas(self) -> Self:
        if (self.topic_min_insync_replicas or 0) > self.topic_replication_factor:
            raise ValueError(
                f"topic_min_insync_replicas ({self.topic_min_insync_replicas}) is more than "
                f"topic_replication_factor ({self.topic_replication_factor}): no write could succeed"
            )
        return self

    @model_validator(mode="after")
    def _idempotence_needs_acks_all(self) -> Self:
        if self.kafka_idempotence and self.kafka_acks != "all":
            raise ValueError(
                "kafka_idempotence (CHATLOG_KAFKA_IDEMPOTENCE) needs kafka_acks (CHATLOG_KAFKA_ACKS) = all"
            )
        return self

    def producer_guarantees(self) -> dict[str, Any]:
        """The librdkafka keys of what a producer's write guarantees, and how soon it turns from a broker
        that does not answer to the partition's new leader (:attr:`kafka_producer_request_timeout_ms`,
        :attr:`kafka_producer_metadata_refresh_ms`): every chatlog producer has them."""
        keys: dict[str, Any] = {"acks": self.kafka_acks, "enable.idempotence": self.kafka_idempotence}
        if self.kafka_producer_request_timeout_ms is not None:
            keys["request.timeout.ms"] = self.kafka_producer_request_timeout_ms
        if self.kafka_producer_metadata_refresh_ms is not None:
            keys["topic.metadata.refresh.interval.ms"] = self.kafka_producer_metadata_refresh_ms
        return keys

    @property
    def topic_min_isr(self) -> int | None:
        """min.insync.replicas to create topics with; None: the broker's default."""
        if self.topic_min_insync_replicas is not None:
            return self.topic_min_insync_replicas
        return 2 if self.topic_replication_factor >= 3 else None

    @model_validator(mode="after")
    def _kafka_key_has_its_certificate(self) -> Self:
        _key_needs_certificate(
            self.kafka_ssl_key_location, self.kafka_ssl_certificate_location, "CHATLOG_KAFKA_SSL"
        )
        return self

    @field_validator(*_KAFKA_FILES, "kafka_ssl_key_password", mode="before")
    @classmethod
    def _kafka_path(cls, value: object) -> object:
        return _no_path(value)

    @field_validator(*_KAFKA_FILES)
    @classmethod
    def _kafka_file(cls, value: Path | None) -> Path | None:
        return _readable_file(value)

    @field_validator("kafka_security_protocol", "kafka_sasl_mechanism", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        """librdkafka takes these in any case; the settings hold the upper-case name."""
        known = (*get_args(SecurityProtocol), *get_args(SaslMechanism))
        return value.upper() if isinstance(value, str) and value.upper() in known else value

    def with_topics(self, prefix: str, **update: Any) -> Self:
        """A copy whose four topics are ``<prefix>.channels`` etc. (plus any other ``update``)."""
        return self.model_copy(update={**{f"topic_{r}": f"{prefix}.{r}" for r in TOPIC_ROLES}, **update})

    def topic_names(self) -> list[str]:
        """Every topic's name, in the order of TOPIC_ROLES."""
        return [str(getattr(self, f"topic_{r}")) for r in TOPIC_ROLES]

    def topic_env(self) -> dict[str, str]:
        """``CHATLOG_TOPIC_*`` for a child process that must use the same topics."""
        return {f"CHATLOG_TOPIC_{r.upper()}": str(getattr(self, f"topic_{r}")) for r in TOPIC_ROLES}

    def kafka_client_config(self) -> dict[str, Any]:
        """The librdkafka keys shared by every client (dotted names, as librdkafka wants them).

        Raises :class:`SettingsError` (one line) when a SASL protocol lacks its user name or password.
        """
        conf: dict[str, Any] = {
            "bootstrap.servers": self.kafka_bootstrap_servers,
            "security.protocol": self.kafka_security_protocol,
        }
        if self.kafka_sasl_mechanism:
            conf["sasl.mechanism"] = self.kafka_sasl_mechanism
        credentials = self.kafka_sasl_credentials()
        if credentials is not None:
            conf["sasl.username"], conf["sasl.password"] = credentials
        if self.kafka_uses_tls:
            if self.kafka_ssl_ca_location is not None:
                conf["ssl.ca.location"] = str(self.kafka_ssl_ca_location)
            if self.kafka_ssl_certificate_location is not None:
                conf["ssl.certificate.location"] = str(self.kafka_ssl_certificate_location)
            if self.kafka_ssl_key_location is not None:
                conf["ssl.key.location"] = str(self.kafka_ssl_key_location)
            if self.kafka_ssl_key_password is not None:
                conf["ssl.key.password"] = self.kafka_ssl_key_password.get_secret_value()
            if not self.kafka_ssl_check_hostname:
                conf["ssl.endpoint.identification.algorithm"] = "none"
        return conf

    @property
    def kafka_uses_tls(self) -> bool:
        return self.kafka_security_protocol.upper() in ("SSL", "SASL_SSL")

    def kafka_ssl_context(self) -> ssl.SSLContext | None:
        """The TLS settings as a Python context (aiokafka, i.e. the monitor); None without TLS."""
        if not self.kafka_uses_tls:
            return None
        return tls_context(
            self.kafka_ssl_ca_location,
            check_hostname=self.kafka_ssl_check_hostname,
            certificate=self.kafka_ssl_certificate_location,
            key=self.kafka_ssl_key_location,
            key_password=self.kafka_ssl_key_password,
            variables="CHATLOG_KAFKA_SSL",
        )

    def kafka_sasl_credentials(self) -> tuple[str, str] | None:
        """(user, password) for SASL, None when not both set; SettingsError when a SASL protocol lacks one."""
        username, password = self.kafka_sasl_username, self.kafka_sasl_password
        sasl = self.kafka_security_protocol.upper().startswith("SASL_")
        mechanism = (self.kafka_sasl_mechanism or "").upper()
        if sasl and mechanism in PASSWORD_MECHANISMS and (not username or password is None):
            missing = "CHATLOG_KAFKA_SASL_PASSWORD" if username else "CHATLOG_KAFKA_SASL_USERNAME"
            raise SettingsError(
                f"setting kafka_security_protocol (CHATLOG_KAFKA_SECURITY_PROTOCOL): "
                f"{self.kafka_security_protocol} needs {missing}"
            )
        if not username or password is None:
            return None
        return username, password.get_secret_value()


class CassandraSettings(_Base):
    """Where Cassandra is and which keyspace holds the logs."""

    cassandra_hosts: str = Field(default="127.0.0.1", description="Comma-separated contact points.")
    cassandra_port: Port = Field(default=9042, description="CQL native port.")
    cassandra_keyspace: str = Field(
        default="chatlog", pattern=r"^[a-z][a-z0-9_]{0,47}$", description="Keyspace."
    )
    cassandra_local_dc: str = Field(default="datacenter1", description="Local data center for routing.")
    cassandra_replication: str = Field(
        default="{'class': 'SimpleStrategy', 'replication_factor': 1}",
        description="Keyspace replication map used when the keyspace is created: a map literal of "
        "names to names or counts whose 'class' is SimpleStrategy, NetworkTopologyStrategy or "
        "org.apache.cassandra.locator.*, e.g. {'class': 'NetworkTopologyStrategy', 'dc1': 3}.",
    )
    cassandra_consistency: Consistency = Field(
        default="LOCAL_QUORUM",
        description="Consistency level of chatlog's Cassandra reads and writes (the sink's row writes: "
        "CHATLOG_SINK_WRITE_CONSISTENCY). LOCAL_QUORUM: with RF 3, one node may be down and a read still "
        "sees every write that was acknowledged; with RF 1 it is the one replica.",
    )
    cassandra_username: str | None = Field(default=None, description="CQL user name.")
    cassandra_password: SecretStr | None = Field(default=None, description="CQL password (secret).")
    cassandra_ssl: bool = Field(
        default=False,
        description="Connect with TLS (Cassandra's client_encryption_options); default off. Setting "
        "CHATLOG_CASSANDRA_SSL_CA_LOCATION or a client certificate turns it on too.",
    )
    cassandra_ssl_ca_location: Path | None = Field(
        default=None,
        description="PEM file of the CA(s) that signed Cassandra's certificate; default: none, the "
        "system's trusted CAs.",
    )
    cassandra_ssl_certificate_location: Path | None = Field(
        default=None, description="Client certificate (PEM) when Cassandra requires one; default: none."
    )
    cassandra_ssl_key_location: ClientKeyFile = None
    cassandra_ssl_key_password: ClientKeyPassword = None
    cassandra_ssl_check_hostname: bool = Field(
        default=True, description="Check that Cassandra's certificate names the host connected to."
    )
    cassandra_ttl_s: int = Field(
        default=0,
        ge=0,
        le=MAX_TTL_S,
        description="Row TTL in seconds for retention; 0 keeps forever; at most 630720000 (20 years).",
    )

    @field_validator("cassandra_hosts")
    @classmethod
    def _hosts(cls, value: str) -> str:
        return _bare_hosts(value)

    @model_validator(mode="after")
    def _key_has_its_certificate(self) -> Self:
        _key_needs_certificate(
            self.cassandra_ssl_key_location, self.cassandra_ssl_certificate_location, "CHATLOG_CASSANDRA_SSL"
        )
        return self

    @field_validator(*_CASSANDRA_FILES, "cassandra_ssl_key_password", mode="before")
    @classmethod
    def _cassandra_path(cls, value: object) -> object:
        return _no_path(value)

    @field_validator("cassandra_replication")
    @classmethod
    def _replication(cls, value: str) -> str:
        """Parsed and rendered back: it goes into CQL, so nothing but a replication map may pass."""
        return normalize_replication(value)

    @property
    def contact_points(self) -> list[str]:
        return [h.strip() for h in self.cassandra_hosts.split(",") if h.strip()]

    @property
    def cassandra_login(self) -> tuple[str, str] | None:
        """(user, password) when both are set: the login a client sends; else None (no login)."""
        if self.cassandra_username and self.cassandra_password is not None:
            return self.cassandra_username, self.cassandra_password.get_secret_value()
        return None

    @property
    def cassandra_uses_tls(self) -> bool:
        files = (self.cassandra_ssl_ca_location, self.cassandra_ssl_certificate_location)
        return self.cassandra_ssl or any(f is not None for f in files)


class StackSettings(KafkaSettings, CassandraSettings):
    """The local development stack (``chatlog stack``)."""

    state_dir: Path = Field(default=CHATLOG_HOME / ".state", description="Data, logs and pid files.")
    cache_dir: Path = Field(default=CHATLOG_HOME / ".cache", description="Maven artifacts.")
    kafka_port: Port = Field(
        default=9092,
        description="Kafka client port; the stack's clients use it unless CHATLOG_KAFKA_BOOTSTRAP_SERVERS "
        "is set.",
    )
    kafka_controller_port: Port = Field(default=9093, description="KRaft controller port.")
    kafka_sasl_ssl_port: PortOrZero = Field(
        default=9095,
        description="A second Kafka listener, SASL_SSL (SCRAM-SHA-512/256, the stack's own CA in "
        "<state_dir>/kafka/tls), for clients that test TLS and SASL; 0: none. The PLAINTEXT port stays.",
    )
    kafka_heap: str = Field(default="768m", description="Kafka JVM heap.")
    kafka_group_session_timeout_ms: int = Field(
        default=4000, ge=1000, description="Broker default consumer-group session timeout (dev: short)."
    )
    cassandra_storage_port: Port = Field(default=7000, description="Cassandra gossip port.")
    cassandra_heap: str = Field(default="1200m", description="Cassandra JVM heap.")
    stack_java_options: str = Field(
        default="-XX:TieredStopAtLevel=1",
        description="JVM options added to the stack's Kafka and Cassandra (each node of the multi-node stack "
        "too), split as a shell would. The default compiles with C1 only: on this project's 2-core machine, "
        "C2 compiling Kafka's and Cassandra's code was still busy minutes into a run, 140-152 of the demo's "
        "466-512 µs per message (C1 only: 8-10 of 341-396, the other parts alike). Empty: the JVM's "
        "defaults (tiered), which a long-lived broker or node amortises.",
    )
    stack_cassandra_timer_slack_ns: int = Field(
        default=1_000_000,
        ge=0,
        description="How late the kernel may fire the stack's Cassandra's timers (prctl PR_SET_TIMERSLACK, "
        "each node of the multi-node stack too). Its request threads wait for the next task in 10 µs sleeps "
        "for ~10 ms after each: at the kernel's default 50 µs that cost ~1.2 ms of CPU per lone request "
        "here; 1 ms wakes them ~20 times less often, and a request that finds them asleep waits out "
        "the sleep (~1 ms). 0: the kernel's default, as deployed (docs/stack.md).",
    )
    irc_port: Port = Field(default=6667, description="InspIRCd client port.")
    start_timeout_s: PositiveFloat = Field(default=150.0, description="How long `up` waits for each service.")
    cluster_state_dir: Path | None = Field(
        default=None,
        description="Data, logs and pid files of the multi-node stack (`chatlog stack up --nodes 3`); "
        "default <state_dir>/cluster.",
    )
    cluster_kafka_port: int = Field(
        default=19092,
        ge=1,
        le=65435,
        description="Client port of the cluster's first Kafka broker; broker i listens on this + 100*(i-1) "
        "and its KRaft controller on the port after it.",
    )
    cluster_kafka_heap: str = Field(default="384m", description="JVM heap of each of the cluster's brokers.")
    cluster_cassandra_address: str = Field(
        default="127.0.0.11",
        description="Loopback address of the cluster's first Cassandra node (its seed); node i takes the "
        "i-1'th address after it, each with the standard ports (CHATLOG_CASSANDRA_PORT, "
        "CHATLOG_CASSANDRA_STORAGE_PORT).",
    )
    cluster_cassandra_heap: str = Field(default="768m", description="JVM heap of each Cassandra node.")
    cluster_irc_port: Port = Field(
        default=16667,
        description="Client port of the cluster's own InspIRCd (the IRC server of runs on the cluster).",
    )
    cluster_sink_metrics_port: Port = Field(
        default=19181,
        description="Prometheus port of the sink of a run on the cluster (`chatlog demo --nodes 3`, its "
        "fault tests), apart from the single stack's runs.",
    )
    cluster_spark_port: Port = Field(
        default=17077, description="Port of the cluster's Spark standalone master."
    )
    cluster_spark_ui_port: int = Field(
        default=18080,
        ge=1,
        le=65533,
        description="Web UI (and JSON status) port of the Spark master; worker i's UI is on this + i.",
    )
    cluster_spark_workers: int = Field(default=2, ge=1, le=9, description="Spark standalone workers.")
    cluster_spark_worker_cores: int = Field(
        default=1, ge=1, le=64, description="Cores each Spark worker offers its executors."
    )
    cluster_spark_worker_memory: str = Field(
        default="1g", description="Memory each Spark worker offers its executors."
    )
    cluster_spark_daemon_memory: str = Field(
        default="256m", description="JVM heap of the Spark master and worker daemons themselves."
    )

    @field_validator("cluster_cassandra_address")
    @classmethod
    def _loopback(cls, value: str) -> str:
        address = ipaddress.ip_address(value.strip())
        if not (isinstance(address, ipaddress.IPv4Address) and address.is_loopback):
            raise ValueError("a loopback IPv4 address such as 127.0.0.11")
        return str(address)

    @field_validator("stack_java_options")
    @classmethod
    def _java_options(cls, value: str) -> str:
        try:
            shlex.split(value)
        except ValueError as exc:  # e.g. "No closing quotation"
            raise ValueError(f"JVM options a shell could split ({exc})") from None
        return value

    @property
    def stack_java_args(self) -> list[str]:
        """:attr:`stack_java_options` as the arguments of a JVM's command line."""
        return shlex.split(self.stack_java_options)

    @property
    def cluster_dir(self) -> Path:
        """Where the multi-node stack keeps its state (apart from the single stack's services)."""
        return self.cluster_state_dir or self.state_dir / "cluster"

    @model_validator(mode="after")
    def _clients_follow_the_stack_port(self) -> StackSettings:
        """Without an explicit bootstrap address, clients use the stack's own Kafka port."""
        if "kafka_bootstrap_servers" not in self.model_fields_set:
            object.__setattr__(self, "kafka_bootstrap_servers", f"127.0.0.1:{self.kafka_port}")
        return self


_NOT_IN_NICK: Final = re.compile(r"[\s\x00-\x1f\x7f:,!@*?]")
_NOT_IN_TOKEN: Final = re.compile(r"[\s\x00-\x1f\x7f]")


class IrcSettings(_Base):
    """The IRC server the ingesters read from."""

    irc_host: str = Field(default="127.0.0.1", description="IRC server host (Twitch: irc.chat.twitch.tv).")
    irc_port: Port = Field(default=6667, description="IRC port (Twitch TLS: 6697).")
    irc_tls: bool = Field(default=False, description="Connect with TLS.")
    irc_nick: str | None = Field(default=None, description="Nick; default anonymous justinfan<digits>.")
    irc_oauth: SecretStr | None = Field(
        default=None, description="OAuth token (Twitch), sent as PASS oauth:..."
    )
    irc_flavor: Literal["twitch", "ircv3"] = Field(default="ircv3", description="Server dialect.")

    @field_validator("irc_nick", "irc_oauth", mode="before")
    @classmethod
    def _empty_is_anonymous(cls, value: object) -> object:
        """An empty nick or token is not set: the anonymous login."""
        return None if value == "" else value

    @field_validator("irc_nick")
    @classmethod
    def _nick_is_one_word(cls, value: str | None) -> str | None:
        """A nick is sent in NICK and USER lines: a space, a control character (CR, LF: a second IRC
        command) or one of ``:,!@`` would break them."""
        if value is not None and (_NOT_IN_NICK.search(value) or value[0] in "#&$:"):
            raise ValueError("not an IRC nick: letters, digits and -_[]{}\\|^` only, no spaces")
        return value

    @field_validator("irc_oauth")
    @classmethod
    def _token_is_one_word(cls, value: SecretStr | None) -> SecretStr | None:
        """The token is sent in a PASS line: a space or a control character (CR, LF: a second IRC command)
        would inject into it."""
        if value is not None and _NOT_IN_TOKEN.search(value.get_secret_value()):
            raise ValueError("not a token: it must be one word without spaces or control characters")
        return value


S = TypeVar("S", bound=BaseSettings)


KEYSPACE_OPTION: Final = {"cassandra_keyspace": "--keyspace"}
"""``options`` of :func:`load` for the commands with a ``--keyspace``."""


def load(cls: type[S], *, options: Mapping[str, str] | None = None, **overrides: Any) -> S:
    """Build settings from the environment plus explicit overrides; one-line error when invalid.
    ``options``: the command-line option each override came from (``{"status_stale_s": "--stale"}``),
    which the error then names instead of the variable."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return cls(**clean)
    except ValidationError as exc:
        flags = {field: flag for field, flag in (options or {}).items() if field in clean}
        raise SettingsError(describe(cls, exc, flags)) from None
