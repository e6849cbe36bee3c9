"""A structural JSON schema of the Spark operator's ``SparkApplication`` (sparkoperator.k8s.io/v1beta2).

No package in the registries reachable here ships the operator's CRD schema, so this one is written from
the operator's API types (api/v1beta2/sparkapplication_types.go, spark-operator 2.x): every field name of
the spec, driver, executor and restart policy with its type, the enums and minimums the CRD declares, the
required fields, and no unknown fields (like ``kubectl apply`` with strict field validation). Embedded
Kubernetes types (volumes, env, security contexts, affinity, ...) are checked against the real Kubernetes
schemas from kubernetes-validate (``/api/_definitions.json``).
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

_STR: Schema = {"type": "string"}
_BOOL: Schema = {"type": "boolean"}
_INT: Schema = {"type": "integer"}
_STR_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
_STR_LIST: Schema = {"type": "array", "items": {"type": "string"}}
_OBJECT: Schema = {"type": "object"}


def _core(name: str) -> Schema:
    return {"$ref": f"/api/_definitions.json#/$defs/io.k8s.api.core.v1.{name}"}


def _list_of(item: Schema) -> Schema:
    return {"type": "array", "items": item}


def _closed(properties: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_PORT = _closed(
    {"name": _STR, "protocol": _STR, "containerPort": _INT}, ("name", "protocol", "containerPort")
)

_POD_SPEC: dict[str, Schema] = {
    "template": _OBJECT,
    "cores": {"type": "integer", "minimum": 1},
    "coreLimit": _STR,
    "memory": _STR,
    "memoryLimit": _STR,
    "memoryOverhead": _STR,
    "gpu": _closed({"name": _STR, "quantity": _INT}, ("name", "quantity")),
    "image": _STR,
    "configMaps": _list_of(_closed({"name": _STR, "path": _STR}, ("name", "path"))),
    "secrets": _list_of(
        _closed(
            {
                "name": _STR,
                "path": _STR,
                "secretType": {"enum": ["GCPServiceAccount", "HadoopDelegationToken", "Generic"]},
            },
            ("name", "path", "secretType"),
        )
    ),
    "env": _list_of(_core("EnvVar")),
    "envVars": _STR_MAP,
    "envFrom": _list_of(_core("EnvFromSource")),
    "envSecretKeyRefs": {
        "type": "object",
        "additionalProperties": _closed({"name": _STR, "key": _STR}, ("name", "key")),
    },
    "labels": _STR_MAP,
    "annotations": _STR_MAP,
    "volumeMounts": _list_of(_core("VolumeMount")),
    "affinity": _core("Affinity"),
    "tolerations": _list_of(_core("Toleration")),
    "podSecurityContext": _core("PodSecurityContext"),
    "securityContext": _core("SecurityContext"),
    "schedulerName": _STR,
    "sidecars": _list_of(_core("Container")),
    "initContainers": _list_of(_core("Container")),
    "hostNetwork": _BOOL,
    "nodeSelector": _STR_MAP,
    "dnsConfig": _core("PodDNSConfig"),
    "terminationGracePeriodSeconds": _INT,
    "serviceAccount": _STR,
    "hostAliases": _list_of(_core("HostAlias")),
    "shareProcessNamespace": _BOOL,
}

_DRIVER = _closed(
    {
        **_POD_SPEC,
        "podName": {
            "type": "string",
            "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        },
        "coreRequest": _STR,
        "javaOptions": _STR,
        "lifecycle": _core("Lifecycle"),
        "kubernetesMaster": _STR,
        "serviceAnnotations": _STR_MAP,
        "serviceLabels": _STR_MAP,
        "ports": _list_of(_PORT),
        "priorityClassName": _STR,
    }
)

_EXECUTOR = _closed(
    {
        **_POD_SPEC,
        "instances": {"type": "integer", "minimum": 1},
        "coreRequest": _STR,
        "javaOptions": _STR,
        "lifecycle": _core("Lifecycle"),
        "deleteOnTermination": _BOOL,
        "ports": _list_of(_PORT),
        "priorityClassName": _STR,
    }
)

_RESTART_POLICY = _closed(
    {
        "type": {"enum": ["Never", "Always", "OnFailure"]},
        "onSubmissionFailureRetries": {"type": "integer", "minimum": 0},
        "onFailureRetries": {"type": "integer", "minimum": 0},
        "onSubmissionFailureRetryInterval": {"type": "integer", "minimum": 1},
        "onFailureRetryInterval": {"type": "integer", "minimum": 1},
    }
)

_DEPS = _closed(
    {
        key: _STR_LIST
        for key in ("jars", "files", "pyFiles", "packages", "excludePackages", "repositories", "archives")
    }
)

_SPEC = _closed(
    {
        "suspend": _BOOL,
        "type": {"enum": ["Java", "Python", "Scala", "R"]},
        "sparkVersion": _STR,
        "mode": {"enum": ["cluster", "client"]},
        "proxyUser": _STR,
        "image": _STR,
        "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
        "imagePullSecrets": _STR_LIST,
        "mainClass": _STR,
        "mainApplicationFile": _STR,
        "arguments": _STR_LIST,
        "sparkConf": _STR_MAP,
        "hadoopConf": _STR_MAP,
        "sparkConfigMap": _STR,
        "hadoopConfigMap": _STR,
        "volumes": _list_of(_core("Volume")),
        "driver": _DRIVER,
        "executor": _EXECUTOR,
        "deps": _DEPS,
        "restartPolicy": _RESTART_POLICY,
        "nodeSelector": _STR_MAP,
        "failureRetries": _INT,
        "retryInterval": _INT,
        "pythonVersion": {"enum": ["2", "3"]},
        "memoryOverheadFactor": _STR,
        "monitoring": _OBJECT,
        "batchScheduler": _STR,
        "timeToLiveSeconds": _INT,
        "batchSchedulerOptions": _OBJECT,
        "sparkUIOptions": _OBJECT,
        "driverIngressOptions": {"type": "array", "items": _OBJECT},
        "dynamicAllocation": _OBJECT,
        "driverPodDisruptionBudget": _BOOL,
    },
    ("driver", "executor", "mainApplicationFile", "sparkVersion", "type"),
)


def spark_application_schema() -> Schema:
    """The schema of one SparkApplication resource (status excluded: manifests do not set it)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "/api/sparkapplication-sparkoperator-v1beta2.json",
        **_closed(
            {
                "apiVersion": {"const": "sparkoperator.k8s.io/v1beta2"},
                "kind": {"const": "SparkApplication"},
                "metadata": {
                    "$ref": "/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
                },
                "spec": _SPEC,
            },
            ("apiVersion", "kind", "metadata", "spec"),
        ),
    }
