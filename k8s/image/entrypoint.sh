#!/usr/bin/env bash
# Entry point of the chatlog image (one image for the CLI, the ingesters and the Spark sink).
#
#   <image> ingest --replica 0     -> chatlog ingest --replica 0 (any chatlog sub-command)
#   <image> spark-submit ARGS...   -> Spark's spark-submit (pyspark's, with the Kafka source baked in)
#   <image> driver ARGS...         -> Spark on Kubernetes driver pod   (set by Spark / spark-operator)
#   <image> executor               -> Spark on Kubernetes executor pod (set by Spark / spark-operator)
#
# The driver/executor contract (arguments and SPARK_* variables) is the one Spark's own Kubernetes
# images implement; pyspark from PyPI ships no entry point for it, so this script provides one.
set -euo pipefail

spark_classpath() {
  local cp="${SPARK_HOME}/jars/*"
  if [ -n "${SPARK_CONF_DIR:-}" ]; then cp="${SPARK_CONF_DIR}:${cp}"; fi
  if [ -n "${HADOOP_CONF_DIR:-}" ]; then cp="${HADOOP_CONF_DIR}:${cp}"; fi
  if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then cp="${cp}:${SPARK_EXTRA_CLASSPATH}"; fi
  printf '%s' "${cp}"
}

case "${1:-}" in
  driver)
    shift
    exec "${SPARK_HOME}/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client \
      "$@"
    ;;
  executor)
    shift
    # Spark passes the executor's JVM options as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in order.
    java_opts=()
    while IFS= read -r name; do
      java_opts+=("${!name}")
    done < <(compgen -e | grep '^SPARK_JAVA_OPT_[0-9]*$' | sort -t_ -k4 -n || true)
    exec "${JAVA_HOME}/bin/java" "${java_opts[@]}" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
      -cp "$(spark_classpath)" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" \
      --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
      --podName "${SPARK_EXECUTOR_POD_NAME}" \
      "$@"
    ;;
  spark-submit)
    shift
    exec "${SPARK_HOME}/bin/spark-submit" "$@"
    ;;
  *)
    exec chatlog "$@"
    ;;
esac
