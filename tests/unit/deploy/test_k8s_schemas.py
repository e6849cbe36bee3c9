"""Every rendered manifest validates: Kubernetes kinds against the Kubernetes schemas, Strimzi resources
against Strimzi's CRD schemas, the SparkApplication against its structural schema; each validator fails a
broken copy. Slow the first time on a machine: kustomize is built from the Go module proxy."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from tests.unit.deploy import tooling

pytestmark = pytest.mark.slow

STRIMZI = "kafka.strimzi.io"
SPARK = "sparkoperator.k8s.io"


def _group(resource: tooling.Resource) -> str:
    api_version = str(resource["apiVersion"])
    return api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""


def _errors(resources: list[tooling.Resource], strimzi_models: Path) -> list[str]:
    errors: list[str] = []
    strimzi = [r for r in resources if _group(r) == STRIMZI]
    errors += [e for e in tooling.validate_strimzi(strimzi, strimzi_models) if e]
    for resource in resources:
        if _group(resource) == SPARK:
            error = tooling.validate_spark_application(resource)
            errors += [error] if error else []
        elif _group(resource) != STRIMZI:
            for version in tooling.KUBERNETES_VERSIONS:
                error = tooling.validate_core(resource, version)
                errors += [f"k8s {version}: {error}"] if error else []
    return errors


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_every_rendered_resource_validates(
    overlay: str, rendered: dict[str, list[tooling.Resource]], strimzi_models: Path
) -> None:
    resources = rendered[overlay]
    assert len(resources) > 20
    assert not _errors(resources, strimzi_models)


def _find(resources: list[tooling.Resource], kind: str, name: str | None = None) -> tooling.Resource:
    return copy.deepcopy(
        next(r for r in resources if r["kind"] == kind and name in (None, r["metadata"]["name"]))
    )


def test_kubernetes_validation_fails_a_broken_deployment(rendered: dict[str, list[tooling.Resource]]) -> None:
    deployment = _find(rendered["prod"], "Deployment", "chatlog-ingest-r0")
    deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = "sixty"
    assert "terminationGracePeriodSeconds" in str(tooling.validate_core(deployment, "1.37.0"))
    typo = _find(rendered["prod"], "Deployment", "chatlog-ingest-r0")
    typo["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    assert "readinessprobe" in str(tooling.validate_core(typo, "1.37.0"))


def test_kubernetes_validation_knows_the_version_boundary(
    rendered: dict[str, list[tooling.Resource]],
) -> None:
    """mismatchLabelKeys does not exist before Kubernetes 1.29: the checker must see that."""
    deployment = _find(rendered["prod"], "Deployment", "chatlog-ingest-r0")
    assert tooling.validate_core(deployment, "1.31.0") is None
    assert "mismatchLabelKeys" in str(tooling.validate_core(deployment, "1.28.0"))


def test_strimzi_validation_fails_a_broken_topic(
    rendered: dict[str, list[tooling.Resource]], strimzi_models: Path
) -> None:
    topic = _find(rendered["prod"], "KafkaTopic", "chatlog-messages")
    topic["spec"]["partitions"] = 0
    pool = _find(rendered["prod"], "KafkaNodePool")
    pool["spec"]["roles"] = ["zookeeper"]
    unknown = {"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaTopicz", "metadata": {"name": "x"}}
    errors = tooling.validate_strimzi([topic, pool, unknown], strimzi_models)
    assert errors[0] is not None and "partitions" in errors[0]
    assert errors[1] is not None and "roles" in errors[1]
    assert errors[2] is not None and "no schema" in errors[2]


def test_spark_application_validation_fails_broken_copies(
    rendered: dict[str, list[tooling.Resource]],
) -> None:
    app = _find(rendered["prod"], "SparkApplication")
    assert tooling.validate_spark_application(app) is None
    wrong_enum = copy.deepcopy(app)
    wrong_enum["spec"]["type"] = "Pyton"
    assert "Pyton" in str(tooling.validate_spark_application(wrong_enum))
    unknown_field = copy.deepcopy(app)
    unknown_field["spec"]["driver"]["memmory"] = "1g"
    assert "memmory" in str(tooling.validate_spark_application(unknown_field))
    bad_core_type = copy.deepcopy(app)
    bad_core_type["spec"]["volumes"][0]["persistentVolumeClaim"] = {"claim": "x"}
    assert tooling.validate_spark_application(bad_core_type) is not None
    missing = copy.deepcopy(app)
    del missing["spec"]["mainApplicationFile"]
    assert "mainApplicationFile" in str(tooling.validate_spark_application(missing))


def test_kustomize_fails_a_broken_kustomization(kustomize: Path, tmp_path: Path) -> None:
    overlay = tmp_path / "broken"
    overlay.mkdir()
    base = os.path.relpath(tooling.REPO / "k8s" / "base", overlay)
    (overlay / "kustomization.yaml").write_text(f"resources: [{base}, missing.yaml]\n")
    with pytest.raises(tooling.ToolError, match=r"missing\.yaml"):
        tooling.kustomize_build(kustomize, overlay)
