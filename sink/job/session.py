"""The Spark session of the sink and the options of Spark's Kafka source.

Locally the Kafka source jars come from the Maven cache (``chatlog stack fetch``; fetched here if
missing), without the jars pyspark already ships. On a cluster, ``CHATLOG_SPARK_JARS`` (comma-separated
paths/URLs) or ``CHATLOG_SPARK_PACKAGES`` (Maven coordinates) replace them; under ``spark-submit``
what spark-submit was told (``--master``, ``--jars``, ``--packages``) wins unless set explicitly.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from core.errors import ChatlogError, SettingsError, one_line
from sink.settings import local_checkpoint
from sink.spark_private import CHECKPOINT_MANAGER_CONF, checkpoint_manager_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sink.settings import SinkSettings

FILESYSTEM_CHECKPOINTS = checkpoint_manager_class()
_JAR_NAME = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def under_spark_submit() -> bool:
    """True when this Python process was started by ``spark-submit`` (the JVM is already up)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _artifact(jar: Path) -> str:
    match = _JAR_NAME.match(jar.name)
    return match.group("artifact") if match else jar.name


def kafka_source_jars(settings: SinkSettings) -> list[str]:
    """The jars that add Spark's Kafka source to the installed pyspark."""
    if settings.spark_jars:
        return [j.strip() for j in settings.spark_jars.split(",") if j.strip()]
    if settings.spark_packages:
        return []
    import pyspark

    from core import maven

    bundle = maven.spark_kafka_bundle(maven.installed_pyspark_version())
    maven.fetch(bundle, settings.cache_dir)
    shipped = {_artifact(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = [Path(j) for j in bundle.classpath(settings.cache_dir).split(":")]
    return [str(j) for j in jars if _artifact(j) not in shipped]


def session_conf(settings: SinkSettings) -> dict[str, str]:
    """Spark configuration of the sink (what is not already decided by spark-submit)."""
    submit = under_spark_submit()
    conf: dict[str, str] = {
        "spark.app.name": settings.spark_app_name,
        "spark.sql.shuffle.partitions": str(settings.spark_shuffle_partitions),
        "spark.ui.enabled": str(settings.spark_ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.python.worker.reuse": "true",
        # the Kafka source's credentials (JAAS line, client key) never show in plans, the UI or errors
        "spark.sql.redaction.options.regex": REDACTED_OPTIONS,
    }
    if local_checkpoint(settings.checkpoint_location):
        # Spark's default manager renames through Hadoop's FileContext, which on the local file system
        # starts a `readlink` process per rename (FileUtil.readLink): ~16 processes per micro-batch
        # (offset log, commit log, state changelogs). The FileSystem-based manager (a private class,
        # sink/spark_private.py) renames in Java: a shorter walCommit + commitOffsets per batch (the
        # durations in Spark's progress).
        conf[CHECKPOINT_MANAGER_CONF] = FILESYSTEM_CHECKPOINTS
    if not submit or "CHATLOG_SPARK_MASTER" in os.environ:
        conf["spark.master"] = settings.spark_master
    if not submit:
        conf["spark.driver.memory"] = settings.spark_driver_memory
        if settings.spark_driver_java_options:
            conf["spark.driver.extraJavaOptions"] = settings.spark_driver_java_options
    jars = kafka_source_jars(settings) if (not submit or settings.spark_jars) else []
    if jars:
        conf["spark.jars"] = ",".join(jars)
    if settings.spark_packages:
        conf["spark.jars.packages"] = settings.spark_packages
    return conf


def get_session(settings: SinkSettings) -> SparkSession:
    """The (new or running) Spark session, configured for the sink."""
    import logging

    from pyspark.sql import SparkSession

    logging.getLogger("py4j").setLevel(logging.WARNING)  # one INFO line per callback otherwise
    if not under_spark_submit():
        # pyspark takes the workers' interpreter from PYSPARK_PYTHON (default: python3 on PATH), also the
        # executors' of a standalone master on this machine (`chatlog stack up --nodes 3`)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in session_conf(settings).items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        raise ChatlogError(f"cannot start Spark ({settings.spark_master}): {one_line(exc, 300)}") from None
    spark.sparkContext.setLogLevel(settings.spark_log_level)
    master = spark.sparkContext.master or ""
    if not master.startswith("local"):
        _ship_code(spark)
    return spark


def _ship_code(spark: SparkSession) -> None:
    """Send the chatlog packages to the executors of a cluster (their Python workers import them)."""
    import tempfile

    archive = code_archive(Path(tempfile.mkdtemp(prefix="chatlog-py-")) / "chatlog_packages.zip")
    spark.sparkContext.addPyFile(str(archive))


def code_archive(path: Path) -> Path:
    """A zip at ``path`` of the chatlog packages the executors' Python workers import (the writer's, and
    what it imports), each found where it is imported from (its own place, not this module's: modules
    move), with paths relative to the directory that holds it."""
    import zipfile

    import consent
    import core
    import schemas
    import sink
    import store

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in (schemas, core, consent, store, sink):
            directory = Path(str(package.__file__)).resolve().parent
            for file in directory.rglob("*"):
                if file.is_file() and "__pycache__" not in file.parts:
                    archive.write(file, file.relative_to(directory.parent))
    return path


PARTITION_FETCH_BYTES: Final = 16 * 2**20
"""``kafka.max.partition.fetch.bytes`` of Spark's Kafka consumers (Kafka's default 1 MiB, ~2,500 chat
events): a poll returns what the fetches brought, so a poll of ``sink_kafka_max_poll_records`` needs fetches
that large."""


def kafka_options(settings: SinkSettings) -> dict[str, str]:
    """Options of Spark's Kafka source for the cluster of ``settings`` (``kafka.`` prefixed).

    TLS: the CA file as a PEM truststore; a client certificate and key as a PEM keystore, given inline
    (Kafka's ``ssl.keystore.certificate.chain`` / ``ssl.keystore.key``), so that executors need no copy
    of the files. SASL: a JAAS line for PLAIN or SCRAM. Kafka's Java client hides these keys in its
    logs, and :data:`REDACTED_OPTIONS` hides them in Spark's plans and UI.
    """
    opts = {
        "kafka.bootstrap.servers": settings.kafka_bootstrap_servers,
        "kafka.security.protocol": settings.kafka_security_protocol,
        "kafka.fetch.max.wait.ms": str(settings.sink_kafka_fetch_max_wait_ms),
        "kafka.max.poll.records": str(settings.sink_kafka_max_poll_records),
        "kafka.max.partition.fetch.bytes": str(PARTITION_FETCH_BYTES),
        "kafka.request.timeout.ms": str(settings.sink_kafka_request_timeout_ms),
    }
    if settings.sink_kafka_api_timeout_ms is not None:
        opts["kafka.default.api.timeout.ms"] = str(settings.sink_kafka_api_timeout_ms)
    if settings.sink_kafka_metadata_max_age_ms is not None:
        opts["kafka.metadata.max.age.ms"] = str(settings.sink_kafka_metadata_max_age_ms)
    if settings.sink_kafka_reconnect_backoff_ms is not None:
        backoff = str(settings.sink_kafka_reconnect_backoff_ms)
        opts["kafka.reconnect.backoff.ms"] = opts["kafka.reconnect.backoff.max.ms"] = backoff
    if settings.kafka_uses_tls:
        opts.update(_tls_options(settings))
    credentials = settings.kafka_sasl_credentials()
    if settings.kafka_sasl_mechanism:
        opts["kafka.sasl.mechanism"] = settings.kafka_sasl_mechanism
        if credentials is not None:
            opts["kafka.sasl.jaas.config"] = jaas_config(settings.kafka_sasl_mechanism, *credentials)
    return opts


JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
REDACTED_OPTIONS = r"(?i)url|jaas|password|keystore\.key|truststore\.certificates"
"""spark.sql.redaction.options.regex: data source options whose values Spark shows as *********."""


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """``sasl.jaas.config`` for a user name and password (quoted as Kafka's JAAS parser reads them)."""
    module = JAAS_MODULES.get(mechanism.upper())
    if module is None:
        raise SettingsError(
            f"setting kafka_sasl_mechanism (CHATLOG_KAFKA_SASL_MECHANISM): the sink's Kafka source "
            f"supports {', '.join(JAAS_MODULES)}, not {mechanism}"
        )

    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return f"{module} required username={quoted(username)} password={quoted(password)};"


def _tls_options(settings: SinkSettings) -> dict[str, str]:
    opts: dict[str, str] = {}
    if settings.kafka_ssl_ca_location is not None:
        opts["kafka.ssl.truststore.type"] = "PEM"
        opts["kafka.ssl.truststore.location"] = str(settings.kafka_ssl_ca_location)
    cert, key = settings.kafka_ssl_certificate_location, settings.kafka_ssl_key_location
    if cert is not None and key is not None:
        try:
            chain, private_key = cert.read_text(), key.read_text()
        except OSError as exc:
            raise SettingsError(
                f"setting kafka_ssl_certificate_location / kafka_ssl_key_location: cannot read "
                f"{exc.filename}: {exc.strerror}"
            ) from None
        opts["kafka.ssl.keystore.type"] = "PEM"
        opts["kafka.ssl.keystore.certificate.chain"] = chain
        opts["kafka.ssl.keystore.key"] = private_key
        if settings.kafka_ssl_key_password is not None:
            opts["kafka.ssl.key.password"] = settings.kafka_ssl_key_password.get_secret_value()
    if not settings.kafka_ssl_check_hostname:
        opts["kafka.ssl.endpoint.identification.algorithm"] = ""
    return opts


_KAFKA_ERROR = re.compile(r"org\.apache\.kafka\.common\.errors\.(\w+): ([^\n]+)")


def kafka_failure(exc: BaseException, settings: SinkSettings) -> str | None:
    """One line for a Spark error whose cause is Kafka refusing us (authentication, TLS, authorization).

    None when the error is something else. Any secret of ``settings`` is masked, wherever it appears.
    """
    text = str(exc)
    match = _KAFKA_ERROR.search(text)
    if match is None:
        return None
    line = f"Kafka at {settings.kafka_bootstrap_servers} refused the Kafka source: {match[1]}: {match[2]}"
    for secret in (settings.kafka_sasl_password, settings.kafka_ssl_key_password):
        if secret is not None and secret.get_secret_value():
            line = line.replace(secret.get_secret_value(), "******")
    return one_line(line, 400)
