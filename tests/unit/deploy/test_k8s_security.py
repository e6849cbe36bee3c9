"""The rendered manifests isolate the components: a NetworkPolicy per component lets through exactly the
connections the design needs (and Strimzi's listener peers do the same for Kafka), the Cassandra and Spark
pods run locked down, and the Spark driver's Role holds only what the driver uses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.deploy import tooling

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("overlay", ["dev", "prod"])]

Resource = tooling.Resource
NAME = {"app.kubernetes.io/name": "chatlog"}
KAFKA_POD = {"strimzi.io/cluster": "chatlog", "strimzi.io/name": "chatlog-kafka", "strimzi.io/kind": "Kafka"}
KAFKA_PORTS = {"9092": 9092}
SERVE_POD = {**NAME, "app.kubernetes.io/component": "serve"}  # no workload yet; its policy is ready
KAFKA_CLIENTS = {"ingest", "sink", "backfill", "serve"}
CASSANDRA_CLIENTS = {"sink", "backfill", "schema", "pack", "serve"}


@pytest.fixture
def resources(overlay: str, rendered: dict[str, list[Resource]]) -> list[Resource]:
    return rendered[overlay]


def _all(resources: list[Resource], kind: str) -> list[Resource]:
    return [r for r in resources if r["kind"] == kind]


def _pods(resources: list[Resource]) -> Iterator[tuple[str, dict[str, str], dict[str, Any]]]:
    """(where, pod labels, pod spec) of every pod the manifests make; SparkApplication roles included."""
    for r in resources:
        spec = r.get("spec", {})
        if r["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if r["kind"] in {"Deployment", "StatefulSet", "Job", "CronJob"}:
            template = spec["template"]
            yield f"{r['kind']}/{r['metadata']['name']}", template["metadata"]["labels"], template["spec"]
        if r["kind"] == "SparkApplication":
            for role in ("driver", "executor"):
                part = spec[role]
                pod = {"containers": [part], "securityContext": part.get("podSecurityContext", {})}
                yield f"SparkApplication/{r['metadata']['name']}/{role}", part["labels"], pod


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        value, op = labels.get(expr["key"]), expr["operator"]
        ok = {
            "In": value in expr.get("values", []),
            "NotIn": value not in expr.get("values", []),
            "Exists": value is not None,
            "DoesNotExist": value is None,
        }[op]
        if not ok:
            return False
    return True


def _ports_of(labels: dict[str, str], resources: list[Resource]) -> dict[str, int]:
    """Container port names and numbers of the pods with ``labels`` (named ports in policies)."""
    if labels == KAFKA_POD:
        return KAFKA_PORTS
    found: dict[str, int] = {}
    for _, pod_labels, pod in _pods(resources):
        if _selects({"matchLabels": labels}, pod_labels):
            for c in pod["containers"]:
                found.update(
                    {p.get("name", str(p["containerPort"])): p["containerPort"] for p in c.get("ports", [])}
                )
    return found


def _port_ok(rule: dict[str, Any], port: int, dest_ports: dict[str, int]) -> bool:
    if "ports" not in rule:
        return True
    for p in rule["ports"]:
        if p.get("protocol", "TCP") != "TCP":
            continue
        want = p.get("port")
        if want is None or want == port or dest_ports.get(str(want)) == port:
            return True
    return False


def _peer_ok(peers: list[dict[str, Any]] | None, labels: dict[str, str]) -> bool:
    """Does a from/to list admit a pod of this namespace with ``labels``? (absent list: anyone)"""
    if peers is None:
        return True
    return any(
        "namespaceSelector" not in p and "ipBlock" not in p and _selects(p["podSelector"], labels)
        for p in peers
    )


def _policy(resources: list[Resource], labels: dict[str, str]) -> Resource | None:
    policies = [p for p in _all(resources, "NetworkPolicy") if _selects(p["spec"]["podSelector"], labels)]
    assert len(policies) <= 1, [p["metadata"]["name"] for p in policies]
    return policies[0] if policies else None


def _kafka_ingress(resources: list[Resource]) -> list[dict[str, Any]]:
    (kafka,) = _all(resources, "Kafka")
    return [
        {"from": lis["networkPolicyPeers"], "ports": [{"port": lis["port"]}]}
        for lis in kafka["spec"]["kafka"]["listeners"]
        if "networkPolicyPeers" in lis
    ]


def _allowed(resources: list[Resource], src: dict[str, str], dst: dict[str, str], port: int) -> bool:
    dest_ports = _ports_of(dst, resources)
    out = _policy(resources, src)
    if out is not None and "Egress" in out["spec"]["policyTypes"]:
        rules = out["spec"].get("egress", [])
        if not any(_peer_ok(r.get("to"), dst) and _port_ok(r, port, dest_ports) for r in rules):
            return False
    ingress: list[dict[str, Any]] | None
    if dst == KAFKA_POD:
        ingress = _kafka_ingress(resources)
    else:
        into = _policy(resources, dst)
        ingress = None if into is None else into["spec"].get("ingress", [])
    return ingress is None or any(
        _peer_ok(r.get("from"), src) and _port_ok(r, port, dest_ports) for r in ingress
    )


def _component_labels(resources: list[Resource]) -> dict[str, dict[str, str]]:
    out = {"serve": SERVE_POD}
    for _, labels, _ in _pods(resources):
        component = labels.get("app.kubernetes.io/component")
        if component and labels.get("app.kubernetes.io/name") == "chatlog":
            out[component] = {
                k: v
                for k, v in labels.items()
                if k in ("app.kubernetes.io/name", "app.kubernetes.io/component", "chatlog.io/replica")
            }
    return out


def test_every_chatlog_pod_is_selected_by_exactly_one_policy_of_both_directions(
    resources: list[Resource],
) -> None:
    for where, labels, _ in _pods(resources):
        policy = _policy(resources, labels)
        assert policy is not None, f"{where}: no NetworkPolicy selects {labels}"
        assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}, where
        assert policy["metadata"]["name"].endswith(labels["app.kubernetes.io/component"]), where
    assert _policy(resources, SERVE_POD) is not None


def test_kafka_admits_only_its_clients(resources: list[Resource]) -> None:
    pods = _component_labels(resources)
    for component, labels in pods.items():
        expected = component in KAFKA_CLIENTS
        assert _allowed(resources, labels, KAFKA_POD, 9092) is expected, component
    assert not _allowed(resources, pods["ingest"], KAFKA_POD, 9091)  # the replication listener is Strimzi's


def test_cassandra_admits_only_its_clients_and_its_own_gossip(resources: list[Resource]) -> None:
    pods = _component_labels(resources)
    cassandra = pods["cassandra"]
    for component, labels in pods.items():
        if component == "cassandra":
            continue
        assert _allowed(resources, labels, cassandra, 9042) is (component in CASSANDRA_CLIENTS), component
        assert not _allowed(resources, labels, cassandra, 7000), component
    assert _allowed(resources, cassandra, cassandra, 7000)
    assert not _allowed(resources, cassandra, KAFKA_POD, 9092)


def test_spark_pods_reach_each_other_and_nothing_else_reaches_them(resources: list[Resource]) -> None:
    pods = _component_labels(resources)
    sink = pods["sink"]
    assert _allowed(resources, sink, sink, 7078)  # driver <-> executors: RPC, block manager, shuffle
    for component in ("ingest", "backfill", "schema", "cassandra"):
        assert not _allowed(resources, pods[component], sink, 7078), component
    assert _allowed(resources, {"app": "prometheus"}, sink, 9101)
    assert _allowed(resources, {"app": "prometheus"}, pods["ingest"], 9100)
    assert not _allowed(resources, {"app": "prometheus"}, pods["ingest"], 22)


def test_ingesters_reach_irc_but_not_cassandra(overlay: str, resources: list[Resource]) -> None:
    pods = _component_labels(resources)
    ingest = pods["ingest"]
    assert not _allowed(resources, ingest, pods["cassandra"], 9042)
    egress = _policy(resources, ingest)["spec"]["egress"]  # type: ignore[index]
    irc_rules = [r for r in egress if "to" not in r]
    assert irc_rules and all({p["port"] for p in r["ports"]} <= {6667, 6697} for r in irc_rules)
    if overlay == "dev":
        assert _allowed(resources, ingest, pods["irc"], 6667)
        assert not _allowed(resources, pods["sink"], pods["irc"], 6667)


def test_every_policy_with_egress_allows_dns_only_to_kube_dns(resources: list[Resource]) -> None:
    for policy in _all(resources, "NetworkPolicy"):
        egress = policy["spec"].get("egress", [])
        if not egress:
            continue
        dns = [r for r in egress if any(p.get("port") == 53 for p in r.get("ports", []))]
        assert dns, policy["metadata"]["name"]
        for rule in dns:
            (peer,) = rule["to"]
            assert peer["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}
            assert peer["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "kube-system"}


def _locked_down(where: str, container: dict[str, Any]) -> None:
    ctx = container.get("securityContext", {})
    assert ctx.get("allowPrivilegeEscalation") is False, where
    assert ctx.get("readOnlyRootFilesystem") is True, where
    assert ctx.get("capabilities", {}).get("drop") == ["ALL"], where
    assert not ctx.get("privileged"), where


def test_cassandra_pods_run_locked_down(resources: list[Resource]) -> None:
    (statefulset,) = [
        s for s in _all(resources, "StatefulSet") if s["metadata"]["name"] == "chatlog-cassandra"
    ]
    pod = statefulset["spec"]["template"]["spec"]
    ctx = pod["securityContext"]
    assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == 999 and ctx["fsGroup"] == 999
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        _locked_down(f"cassandra/{container['name']}", container)
    (cassandra,) = pod["containers"]
    mounts = {m["mountPath"] for m in cassandra["volumeMounts"]}
    assert {"/var/lib/cassandra", "/etc/cassandra", "/var/log/cassandra", "/tmp"} <= mounts
    (init,) = pod["initContainers"]  # seeds /etc/cassandra with the image's configuration
    assert init["image"] == cassandra["image"]
    config = next(m["name"] for m in cassandra["volumeMounts"] if m["mountPath"] == "/etc/cassandra")
    assert config in {m["name"] for m in init["volumeMounts"]}


def test_spark_pods_run_locked_down(resources: list[Resource]) -> None:
    spark_pods = [
        (where, pod)
        for where, labels, pod in _pods(resources)
        if labels.get("app.kubernetes.io/component") in {"sink", "backfill"}
    ]
    assert len(spark_pods) == 3  # driver, executor, backfill
    for where, pod in spark_pods:
        ctx = pod["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["seccompProfile"] == {"type": "RuntimeDefault"}, where
        for container in pod["containers"]:
            _locked_down(where, container)
            assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}, where


def test_spark_driver_role_is_cut_to_what_the_driver_does(resources: list[Resource]) -> None:
    assert not _all(resources, "ClusterRole") and not _all(resources, "ClusterRoleBinding")
    (role,) = _all(resources, "Role")
    granted: dict[str, set[str]] = {}
    for rule in role["rules"]:
        assert rule["apiGroups"] == [""], rule
        for resource in rule["resources"]:
            granted.setdefault(resource, set()).update(rule["verbs"])
    assert set(granted) == {"pods", "services", "configmaps", "persistentvolumeclaims"}
    forbidden = {"*", "update", "patch", "escalate", "bind", "impersonate"}
    assert not any(verbs & forbidden for verbs in granted.values()), granted
    assert {"create", "get", "list", "watch", "delete", "deletecollection"} <= granted["pods"]
    assert {"create", "delete"} <= granted["configmaps"]
    assert granted["persistentvolumeclaims"] <= {"get", "list"}
    (binding,) = _all(resources, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (subject,) = binding["subjects"]
    for app in _all(resources, "SparkApplication"):
        assert app["spec"]["driver"]["serviceAccount"] == subject["name"]
