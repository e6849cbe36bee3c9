"""Fixtures of the static deployment checks: the checkers (installed once per machine) and the renders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.deploy import tooling

OVERLAYS = ("dev", "prod")


def _report(config: pytest.Config, line: str) -> None:
    """Print past output capturing: how long an installation took belongs in the CI log."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if capture is None or reporter is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


def _installed(config: pytest.Config, ensure: Callable[[], tooling.Installed], done: str) -> Path:
    """The path ``ensure`` installed (or found); a failure fails the test, and an installation made now is
    reported as ``done`` and how long it took."""
    try:
        installed = ensure()
    except tooling.ToolError as exc:
        pytest.fail(str(exc))
    if installed.seconds:
        _report(config, f"\n{done} in {installed.seconds:.1f}s")
    return installed.path


@pytest.fixture(scope="session")
def kustomize(pytestconfig: pytest.Config) -> Path:
    """kustomize, built from the Go module proxy into .cache/bin the first time (slow: about a minute)."""
    return _installed(pytestconfig, tooling.ensure_kustomize, f"built kustomize {tooling.KUSTOMIZE_VERSION}")


@pytest.fixture(scope="session")
def strimzi_models(pytestconfig: pytest.Config) -> Path:
    """Strimzi's CRD validators (npm package) in .cache/node, installed the first time (a few seconds)."""
    return _installed(pytestconfig, tooling.ensure_strimzi_models, f"installed {tooling.STRIMZI_MODELS}")


@pytest.fixture(scope="session")
def rendered(kustomize: Path) -> dict[str, list[tooling.Resource]]:
    """`kustomize build` of every overlay."""
    return {
        name: tooling.kustomize_build(kustomize, tooling.REPO / "k8s" / "overlays" / name)
        for name in OVERLAYS
    }
