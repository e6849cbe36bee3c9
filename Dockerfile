# syntax=docker/dockerfile:1
# One image for the chatlog CLI, the ingesters and the Spark sink:
#   Python 3.11 + the chatlog package, Java 17, pyspark (pinned in pyproject.toml) and Spark's Kafka
#   source with its dependencies baked into pyspark's jars/, so nothing is fetched when a container starts.
#
#   docker build -t chatlog:dev .
#   docker run --rm chatlog:dev --help                 # the chatlog CLI (the default entry point)
#   docker run --rm chatlog:dev ingest --replica 0     # an ingester
#   docker run --rm chatlog:dev spark-submit /opt/chatlog/app/sink/job/command.py
# Spark on Kubernetes (spark-operator) starts the same image with `driver` / `executor`
# (see k8s/image/entrypoint.sh).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------------------
# deps: third-party Python packages and the Spark Kafka jars. Rebuilt only when pyproject.toml or the
# Maven coordinates (core/maven.py) change, so code changes do not touch its big layer.
FROM ${PYTHON_IMAGE} AS deps
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Maven resolves the Spark Kafka source exactly like `chatlog stack fetch` does (core/maven.py).
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends maven openjdk-17-jdk-headless \
 && rm -rf /var/lib/apt/lists/*

ENV VIRTUAL_ENV=/opt/chatlog/venv \
    PATH=/opt/chatlog/venv/bin:$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv "$VIRTUAL_ENV"
WORKDIR /src

COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
      > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt

# Spark's Kafka source at pyspark's version. Only the jars pyspark does not already ship (by artifact
# name) go into pyspark's jars/ (on every driver and executor classpath); the same jars stay visible
# to the chatlog code under CHATLOG_CACHE_DIR/lib/spark-kafka.
COPY core/__init__.py core/errors.py core/maven.py /tmp/fetch/core/
RUN PYTHONPATH=/tmp/fetch python -c "from pathlib import Path; from core import maven as a; \
a.fetch(a.spark_kafka_bundle(a.installed_pyspark_version()), Path('/tmp/maven'))" \
 && spark_jars="$(python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')" \
 && bundle=/opt/chatlog/cache/lib/spark-kafka \
 && mkdir -p "$bundle" \
 && cp /tmp/maven/lib/spark-kafka/.coordinates "$bundle/" \
 && for jar in /tmp/maven/lib/spark-kafka/*.jar; do \
      file="$(basename "$jar")"; artifact="${file%-[0-9]*}"; \
      set -- "$spark_jars/$artifact"-[0-9]*.jar; if [ -e "$1" ]; then continue; fi; \
      cp "$jar" "$spark_jars/" || exit 1; \
      ln -s "$spark_jars/$file" "$bundle/$file" || exit 1; \
    done \
 && ls "$spark_jars"/spark-sql-kafka-0-10_*.jar \
 && rm -rf /tmp/maven /tmp/fetch /root/.m2 \
 && find "$VIRTUAL_ENV" -name '__pycache__' -type d -prune -exec rm -rf {} +

# ---------------------------------------------------------------------------------------------------
# app: the chatlog packages alone (a small layer), importable through PYTHONPATH, with the `chatlog` script.
FROM deps AS app
COPY README.md ./
COPY schemas ./schemas
COPY core ./core
COPY consent ./consent
COPY store ./store
COPY ingest ./ingest
COPY sink ./sink
COPY serve ./serve
COPY chatlog ./chatlog
RUN pip install --no-cache-dir --no-deps --target /opt/chatlog/app . \
 && test -f /opt/chatlog/app/sink/job/command.py \
 && test -x /opt/chatlog/app/bin/chatlog \
 && find /opt/chatlog/app -name '__pycache__' -type d -prune -exec rm -rf {} +

# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Java 17 for Spark, tini as PID 1 (signals reach the ingester, which leaves its group on SIGTERM).
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini procps \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17 \
 && groupadd --system --gid 10001 chatlog \
 && useradd --system --uid 10001 --gid chatlog --home-dir /home/chatlog --create-home chatlog \
 && mkdir -p /var/lib/chatlog/checkpoint \
 && chown -R 10001:10001 /var/lib/chatlog

COPY --from=deps /opt/chatlog /opt/chatlog
COPY --from=app /opt/chatlog/app /opt/chatlog/app
COPY k8s/image/entrypoint.sh /usr/local/bin/chatlog-entrypoint

ENV PATH=/opt/chatlog/app/bin:/opt/chatlog/venv/bin:$PATH \
    PYTHONPATH=/opt/chatlog/app \
    JAVA_HOME=/usr/lib/jvm/java-17 \
    SPARK_HOME=/opt/chatlog/venv/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/opt/chatlog/venv/bin/python \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CHATLOG_CACHE_DIR=/opt/chatlog/cache \
    CHATLOG_STATE_DIR=/tmp/chatlog-state \
    CHATLOG_SINK_CHECKPOINT=file:///var/lib/chatlog/checkpoint/sink

USER 10001:10001
WORKDIR /home/chatlog
# Prometheus metrics of `chatlog ingest` (CHATLOG_METRICS_PORT).
EXPOSE 9100
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/chatlog-entrypoint"]
CMD ["--help"]
