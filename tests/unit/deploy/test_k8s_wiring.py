"""The rendered manifests are wired as the design needs: replica groups on disjoint nodes, probes on the
metrics port, graceful termination above the handoff, topics as in schemas/topics.toml, every reference
resolving, settings known to chatlog."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

import pytest

from core.settings import KafkaSettings, load
from ingest.settings import IngestSettings
from schemas.topics import topic_specs
from tests.unit.deploy import tooling
from tests.unit.deploy.settings_names import known_variables

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("overlay", ["dev", "prod"])]

Resource = tooling.Resource
SHUTDOWN_DRAIN_S = IngestSettings.model_fields["ingest_shutdown_drain_s"].default
MIN_READY_S = 10
WORKLOADS = {"Deployment", "StatefulSet", "Job", "CronJob"}
# Objects the manifests refer to but that are made outside them: the backfill range (per backfill, by
# hand) and, in prod, the credentials.
EXTERNAL = {
    "dev": {("ConfigMap", "chatlog-backfill-range")},
    "prod": {("ConfigMap", "chatlog-backfill-range"), ("Secret", "chatlog-secrets")},
}


@pytest.fixture
def resources(overlay: str, rendered: dict[str, list[Resource]]) -> list[Resource]:
    return rendered[overlay]


def _all(resources: list[Resource], kind: str) -> list[Resource]:
    return [r for r in resources if r["kind"] == kind]


def _one(resources: list[Resource], kind: str, name: str | None = None) -> Resource:
    found = [r for r in _all(resources, kind) if name in (None, r["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def _settings(resources: list[Resource]) -> dict[str, str]:
    configmaps = [
        r for r in _all(resources, "ConfigMap") if r["metadata"]["name"].startswith("chatlog-settings-")
    ]
    assert len(configmaps) == 1
    data: dict[str, str] = configmaps[0]["data"]
    return data


def _ingest_deployments(resources: list[Resource]) -> list[Resource]:
    return [
        d
        for d in _all(resources, "Deployment")
        if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") == "ingest"
    ]


def _pod_specs(resources: list[Resource]) -> Iterator[tuple[str, dict[str, Any]]]:
    for r in resources:
        if r["kind"] in WORKLOADS:
            spec = r["spec"]["jobTemplate"]["spec"] if r["kind"] == "CronJob" else r["spec"]
            yield f"{r['kind']}/{r['metadata']['name']}", spec["template"]["spec"]
    for app in _all(resources, "SparkApplication"):
        for role in ("driver", "executor"):
            yield f"SparkApplication/{app['metadata']['name']}/{role}", {"containers": [app["spec"][role]]}


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_two_replica_groups_each_its_own_consumer_group(resources: list[Resource]) -> None:
    deployments = _ingest_deployments(resources)
    groups = {}
    for d in deployments:
        replica = d["spec"]["template"]["metadata"]["labels"]["chatlog.io/replica"]
        args = d["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[:3] == ["ingest", "--replica", replica], d["metadata"]["name"]
        assert args[3:] == ["--worker-id", "$(POD_NAME)"]
        assert d["spec"]["selector"]["matchLabels"]["chatlog.io/replica"] == replica
        assert "replicas" not in d["spec"], "the HPA owns the pod count"
        groups[replica] = d["metadata"]["name"]
    assert groups == {"0": "chatlog-ingest-r0", "1": "chatlog-ingest-r1"}


def test_replica_groups_never_share_a_node_in_prod(overlay: str, resources: list[Resource]) -> None:
    for d in _ingest_deployments(resources):
        labels = d["spec"]["template"]["metadata"]["labels"]
        anti = d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        if overlay == "prod":
            terms = anti["requiredDuringSchedulingIgnoredDuringExecution"]
        else:  # one-node dev clusters: preferred only
            assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti
            terms = [t["podAffinityTerm"] for t in anti["preferredDuringSchedulingIgnoredDuringExecution"]]
        (term,) = terms
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["mismatchLabelKeys"] == ["chatlog.io/replica"]
        selector = term["labelSelector"]["matchLabels"]
        assert "chatlog.io/replica" not in selector, "the term must select the other groups, not its own"
        others = [o for o in _ingest_deployments(resources) if o is not d]
        for other in others:
            other_labels = other["spec"]["template"]["metadata"]["labels"]
            assert _matches(selector, other_labels)
            assert other_labels["chatlog.io/replica"] != labels["chatlog.io/replica"]


def test_termination_is_graceful_and_probes_use_the_metrics_endpoint(resources: list[Resource]) -> None:
    port = int(_settings(resources)["CHATLOG_METRICS_PORT"])
    for d in _ingest_deployments(resources):
        pod = d["spec"]["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] >= SHUTDOWN_DRAIN_S + 10  # the hand-off, then a flush
        (container,) = pod["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == port
        for probe, path in (
            ("startupProbe", "/metrics"),
            ("livenessProbe", "/metrics"),
            ("readinessProbe", "/ready"),
        ):
            assert container[probe]["httpGet"] == {"path": path, "port": "metrics"}, probe
        assert d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
        assert d["spec"]["minReadySeconds"] >= MIN_READY_S


def test_each_group_has_an_autoscaler_and_a_disruption_budget(resources: list[Resource]) -> None:
    buckets = int(_settings(resources)["CHATLOG_CHANNEL_BUCKETS"])
    for d in _ingest_deployments(resources):
        name = d["metadata"]["name"]
        hpa = _one(resources, "HorizontalPodAutoscaler", name)
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"] <= buckets
        assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 300
        pdb = _one(resources, "PodDisruptionBudget", name)
        selector = pdb["spec"]["selector"]["matchLabels"]
        assert _matches(selector, d["spec"]["template"]["metadata"]["labels"])
        for other in _ingest_deployments(resources):
            if other is not d:
                assert not _matches(selector, other["spec"]["template"]["metadata"]["labels"])


def test_topics_match_schemas_topics_toml(overlay: str, resources: list[Resource]) -> None:
    values = {k.removeprefix("CHATLOG_").lower(): v for k, v in _settings(resources).items()}
    given: dict[str, Any] = {k: v for k, v in values.items() if k in KafkaSettings.model_fields}
    settings = load(KafkaSettings, **given)
    topics = {t["spec"]["topicName"]: t for t in _all(resources, "KafkaTopic")}
    wanted = {spec.name: spec for spec in topic_specs(settings)}
    assert set(topics) == set(wanted)
    replicas = 3 if overlay == "prod" else 1
    for name, spec in wanted.items():
        topic = topics[name]["spec"]
        assert topic["partitions"] == spec.partitions, name
        assert topic["replicas"] == replicas, name
        config = {k: str(v) for k, v in topic["config"].items()}
        config.pop("min.insync.replicas", None)  # replication policy of the environment, not the contract
        assert config == spec.config, name


def test_strimzi_resources_belong_to_the_kafka_the_settings_name(resources: list[Resource]) -> None:
    kafka = _one(resources, "Kafka")
    name = kafka["metadata"]["name"]
    for kind in ("KafkaTopic", "KafkaNodePool"):
        for r in _all(resources, kind):
            assert r["metadata"]["labels"]["strimzi.io/cluster"] == name
            assert r["metadata"]["namespace"] == kafka["metadata"]["namespace"]
    plain = next(lis for lis in kafka["spec"]["kafka"]["listeners"] if not lis["tls"])
    assert (
        _settings(resources)["CHATLOG_KAFKA_BOOTSTRAP_SERVERS"] == f"{name}-kafka-bootstrap:{plain['port']}"
    )
    pools = _all(resources, "KafkaNodePool")
    roles = {role for pool in pools for role in pool["spec"]["roles"]}
    assert roles == {"controller", "broker"}  # KRaft: no ZooKeeper


def test_cassandra_service_dc_and_replication_fit_the_settings(resources: list[Resource]) -> None:
    settings = _settings(resources)
    service = _one(resources, "Service", settings["CHATLOG_CASSANDRA_HOSTS"])
    statefulset = _one(resources, "StatefulSet", "chatlog-cassandra")
    assert statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    env = {e["name"]: e.get("value") for e in statefulset["spec"]["template"]["spec"]["containers"][0]["env"]}
    dc = settings["CHATLOG_CASSANDRA_LOCAL_DC"]
    assert env["CASSANDRA_DC"] == dc
    replication = ast.literal_eval(settings["CHATLOG_CASSANDRA_REPLICATION"])
    assert replication["class"] == "NetworkTopologyStrategy"
    assert 1 <= int(replication[dc]) <= statefulset["spec"]["replicas"]
    assert int(env["MAX_HEAP_SIZE"].rstrip("GM")) > 0


def test_every_reference_resolves(overlay: str, resources: list[Resource]) -> None:
    assert not {r["kind"] for r in resources} & {"Pod", "ReplicaSet", "DaemonSet"}, "WORKLOADS misses a kind"
    present = {(r["kind"], r["metadata"]["name"]) for r in resources}
    referenced: set[tuple[str, str]] = set()
    for _, pod in _pod_specs(resources):
        if "serviceAccountName" in pod:
            referenced.add(("ServiceAccount", pod["serviceAccountName"]))
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                referenced.add(("ConfigMap", volume["configMap"]["name"]))
            if "persistentVolumeClaim" in volume:
                referenced.add(("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]))
        for container in pod["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    referenced.add(("ConfigMap", source["configMapRef"]["name"]))
                if "secretRef" in source:
                    referenced.add(("Secret", source["secretRef"]["name"]))
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("configMapKeyRef")
                if ref:
                    referenced.add(("ConfigMap", ref["name"]))
            if "serviceAccount" in container:
                referenced.add(("ServiceAccount", container["serviceAccount"]))
    for app in _all(resources, "SparkApplication"):
        for volume in app["spec"]["volumes"]:
            if "persistentVolumeClaim" in volume:
                referenced.add(("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]))
    for hpa in _all(resources, "HorizontalPodAutoscaler"):
        referenced.add((hpa["spec"]["scaleTargetRef"]["kind"], hpa["spec"]["scaleTargetRef"]["name"]))
    assert referenced - present == EXTERNAL[overlay]


def test_settings_are_known_chatlog_variables(resources: list[Resource]) -> None:
    known = known_variables()
    assert set(_settings(resources)) <= known
    for where, pod in _pod_specs(resources):
        for container in pod["containers"]:
            names = {e["name"] for e in container.get("env", []) if e["name"].startswith("CHATLOG_")}
            assert names <= known, where


def test_images_are_pinned_and_chatlog_pods_run_as_non_root(overlay: str, resources: list[Resource]) -> None:
    chatlog_images = set()
    for where, pod in _pod_specs(resources):
        for container in pod["containers"]:
            image = container.get("image")
            if image is None:  # SparkApplication roles take spec.image
                continue
            name, _, tag = image.rpartition(":")
            assert name and tag and tag != "latest", f"{where}: {image}"
            if "chatlog" in name.rsplit("/", 1)[-1] and "inspircd" not in name:
                chatlog_images.add(image)
                assert pod.get("securityContext", {}).get("runAsNonRoot") is True, where
    for app in _all(resources, "SparkApplication"):
        chatlog_images.add(app["spec"]["image"])
        for role in ("driver", "executor"):
            assert app["spec"][role]["podSecurityContext"]["runAsNonRoot"] is True
    assert len(chatlog_images) == 1, chatlog_images
    assert chatlog_images == (
        {"chatlog:dev"} if overlay == "dev" else {"registry.example.com/chatlog/chatlog:0.1.0"}
    )


def test_sink_runs_job_py_with_its_checkpoint_on_the_volume(overlay: str, resources: list[Resource]) -> None:
    app = _one(resources, "SparkApplication", "chatlog-sink")
    spec = app["spec"]
    assert spec["type"] == "Python" and spec["mode"] == "cluster"
    assert spec["mainApplicationFile"] == "local:///opt/chatlog/app/sink/job/command.py"
    assert spec["restartPolicy"]["type"] == "Always"
    import pyspark

    assert spec["sparkVersion"] == pyspark.__version__
    settings = _settings(resources)
    ports = {p["name"]: p["containerPort"] for p in spec["driver"]["ports"]}
    assert ports["metrics"] == int(settings["CHATLOG_SINK_METRICS_PORT"])
    assert spec["driver"]["annotations"]["prometheus.io/port"] == settings["CHATLOG_SINK_METRICS_PORT"]
    assert "CHATLOG_SPARK_MASTER" not in settings, "spark-submit's master (the operator's) must win"
    checkpoint = settings["CHATLOG_SINK_CHECKPOINT"].removeprefix("file://")
    for role in ("driver", "executor"):
        mounts = spec[role]["volumeMounts"]
        assert any(checkpoint.startswith(m["mountPath"] + "/") for m in mounts), role
    pvc = _one(resources, "PersistentVolumeClaim", spec["volumes"][0]["persistentVolumeClaim"]["claimName"])
    if spec["executor"]["instances"] > 1:
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"], "executors on several nodes share the state"


def test_backfill_template_is_suspended_and_reads_its_range(resources: list[Resource]) -> None:
    cron = _one(resources, "CronJob", "chatlog-backfill")
    assert cron["spec"]["suspend"] is True
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["sink", "--backfill", "--from", "$(BACKFILL_FROM)", "--to", "$(BACKFILL_TO)"]
    env = {e["name"] for e in container["env"]}
    assert {"BACKFILL_FROM", "BACKFILL_TO", "CHATLOG_SPARK_MASTER"} <= env


def test_dev_reads_the_local_irc_server(overlay: str, resources: list[Resource]) -> None:
    settings = _settings(resources)
    if overlay == "prod":
        assert (settings["CHATLOG_IRC_HOST"], settings["CHATLOG_IRC_TLS"]) == ("irc.chat.twitch.tv", "true")
        assert settings["CHATLOG_IRC_FLAVOR"] == "twitch"
        return
    service = _one(resources, "Service", settings["CHATLOG_IRC_HOST"])
    assert [p["port"] for p in service["spec"]["ports"]] == [int(settings["CHATLOG_IRC_PORT"])]
    assert settings["CHATLOG_IRC_FLAVOR"] == "ircv3"
