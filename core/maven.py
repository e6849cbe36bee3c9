"""Java artifacts fetched by Maven from Maven Central into the project's cache directory.

Each bundle is a throw-away POM listing the artifacts; ``mvn dependency:copy-dependencies`` resolves
them with their runtime dependencies into ``<cache>/lib/<bundle>/``. A marker file records the
coordinates so a second ``fetch`` with the same coordinates is a no-op.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.errors import StackError

KAFKA_VERSION = "4.1.1"
CASSANDRA_VERSION = "5.0.6"
LOG4J_VERSION = "2.24.3"


@dataclass(frozen=True)
class Bundle:
    """A named set of Maven coordinates (group:artifact:version) resolved together."""

    name: str
    coordinates: tuple[str, ...]
    excludes: tuple[str, ...] = ()

    def lib_dir(self, cache: Path) -> Path:
        return cache / "lib" / self.name

    def classpath(self, cache: Path) -> str:
        jars = sorted(self.lib_dir(cache).glob("*.jar"))
        if not jars:
            raise StackError(f"no jars for {self.name} in {self.lib_dir(cache)}: run `chatlog stack fetch`")
        return ":".join(str(j) for j in jars)


KAFKA = Bundle(
    "kafka",
    (
        f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        f"org.apache.kafka:kafka-storage:{KAFKA_VERSION}",
        f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
        f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}",
    ),
)
CASSANDRA = Bundle("cassandra", (f"org.apache.cassandra:cassandra-all:{CASSANDRA_VERSION}",))


def spark_kafka_bundle(pyspark_version: str) -> Bundle:
    """Spark's Kafka source at the installed pyspark's version, without what Spark already ships."""
    return Bundle(
        "spark-kafka",
        (f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark_version}",),
    )


def installed_pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>chatlog.cache</groupId><artifactId>{name}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _pom(bundle: Bundle) -> str:
    deps = []
    for coord in bundle.coordinates:
        group, artifact, version = coord.split(":")
        deps.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version></dependency>"
        )
    return _POM.format(name=bundle.name, deps="\n".join(deps))


_SETTINGS = """<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <!-- Some POMs (Spark's) declare extra repositories; resolve everything from one place. -->
    <mirror><id>chatlog-central</id><mirrorOf>*</mirrorOf><url>{url}</url></mirror>
  </mirrors>
</settings>
"""
MAVEN_REPOSITORY = os.environ.get("CHATLOG_MAVEN_REPOSITORY", "https://repo.maven.apache.org/maven2")


def is_fetched(bundle: Bundle, cache: Path) -> bool:
    marker = bundle.lib_dir(cache) / ".coordinates"
    return marker.exists() and marker.read_text() == "\n".join(bundle.coordinates)


def fetch(bundle: Bundle, cache: Path, *, quiet: bool = True) -> Path:
    """Resolve ``bundle`` into ``<cache>/lib/<name>``; a no-op when already there."""
    lib = bundle.lib_dir(cache)
    if is_fetched(bundle, cache):
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError("Maven (`mvn`) is not on PATH: install it (apt-get install maven)")
    work = cache / "poms" / bundle.name
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_pom(bundle))
    (work / "settings.xml").write_text(_SETTINGS.format(url=MAVEN_REPOSITORY))
    if lib.exists():
        shutil.rmtree(lib)
    cmd = [
        mvn,
        "-B",
        *(["-q"] if quiet else []),
        "-s",
        str(work / "settings.xml"),
        "-f",
        str(work / "pom.xml"),
        f"-Dmaven.repo.local={cache / 'm2'}",
        "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
        f"-DoutputDirectory={lib}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        errors = [ln.split("[ERROR]", 1)[1].strip() for ln in lines if "[ERROR]" in ln]
        reason = next((e for e in errors if e), lines[-1] if lines else "no output")
        raise StackError(f"Maven fetch of {bundle.name} ({', '.join(bundle.coordinates)}) failed: {reason}")
    (lib / ".coordinates").write_text("\n".join(bundle.coordinates))
    return lib
