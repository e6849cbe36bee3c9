"""The layers of the project, enforced: no import runs from a lower layer to a higher one, and no two
packages of one layer import each other (docs/internals.md, "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[2]
LAYERS: Final[dict[str, int]] = {
    "schemas": 0,  # contracts
    "core": 1,  # settings, errors, clients, the Maven resolver
    "consent": 2,  # the opt-out registry, its rule, audit: used by every service
    "store": 3,  # storage: the tables, keys, layout, writes, reads, pack and erase (sink and serve call it)
    "ingest": 4,  # the services
    "sink": 4,
    "serve": 4,
    "chatlog": 5,  # the operator's tools: the CLI, the monitor, fill
    "lab": 6,  # what develops and measures the product: the local stack, simulator, demo, benchmarks
}
PLOTTING_AND_PROFILING: Final = ("matplotlib", "psutil")
PRODUCT: Final = ("schemas", "core", "consent", "store", "ingest", "sink", "serve")
LAB: Final = "lab"


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``path``, lazy ones inside functions included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def violations(package: str, root: Path = REPO) -> list[str]:
    """``file:line imports module`` for every import of ``package`` that breaks the layering."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        for line, module in imports_of(path):
            top = module.split(".")[0]
            if top in LAYERS and top != package and LAYERS[top] >= LAYERS[package]:
                out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_import_goes_up_or_sideways(package: str) -> None:
    assert violations(package) == []


def dynamic_imports(package: str, root: Path = REPO) -> list[str]:
    """``file:line`` of every ``importlib.import_module(...)`` or ``__import__(...)`` call in ``package``."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("import_module", "__import__"):
                    out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


@pytest.mark.parametrize("package", PRODUCT)
def test_product_packages_import_nothing_by_name_at_run_time(package: str) -> None:
    """An import by name hides a dependency from the check above (core once imported every settings.py)."""
    assert dynamic_imports(package) == []


def test_the_check_finds_an_import_by_name(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "x.py").write_text(
        "import importlib\n\n\ndef f() -> None:\n    importlib.import_module('sink')\n"
    )
    assert dynamic_imports("core", tmp_path) == ["core/x.py:5"]


@pytest.mark.parametrize("package", PRODUCT)
def test_product_packages_do_not_plot_or_profile(package: str) -> None:
    hits = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in sorted((REPO / package).rglob("*.py"))
        for line, module in imports_of(path)
        if module.split(".")[0] in PLOTTING_AND_PROFILING
    ]
    assert hits == []


def test_benchmarks_live_in_the_lab_only() -> None:
    misplaced = [
        str(p.relative_to(REPO)) for top in LAYERS if top != LAB for p in (REPO / top).rglob("bench*.py")
    ]
    assert misplaced == []


def lab_imports(root: Path = REPO) -> list[str]:
    """``file:line imports module`` for every import of the lab by a file outside it."""
    return [
        f"{path.relative_to(root)}:{line} imports {module}"
        for top in sorted(set(LAYERS) - {LAB})
        for path in sorted((root / top).rglob("*.py"))
        for line, module in imports_of(path)
        if module.split(".")[0] == LAB
    ]


def test_the_product_never_imports_the_lab() -> None:
    """The services, the operator's CLI and the monitor run without the local stack, the simulator, the
    demo or the benchmarks; the lab's commands join the CLI through its entry point (pyproject.toml)."""
    assert lab_imports() == []


def test_the_check_finds_the_product_importing_the_lab(tmp_path: Path) -> None:
    (tmp_path / "chatlog" / "cli").mkdir(parents=True)
    lazy = "import os\n\n\ndef f() -> None:\n    from lab.cli import demo\n"
    (tmp_path / "chatlog" / "cli" / "main.py").write_text(lazy)
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "x.py").write_text("from chatlog.cli import main\n")
    assert lab_imports(tmp_path) == ["chatlog/cli/main.py:5 imports lab.cli"]


def test_the_lab_joins_the_cli_through_its_entry_point() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points."chatlog.commands"]\nlab = "lab.cli:register"' in text


def test_every_package_of_the_repository_has_a_layer() -> None:
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    assert packages == set(LAYERS)


def test_the_check_finds_an_import_that_goes_up(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "x.py").write_text("def f() -> None:\n    from sink.job import command\n")
    (tmp_path / "sink").mkdir()
    (tmp_path / "sink" / "y.py").write_text("import serve.logs\nfrom core import x\n")
    assert violations("core", tmp_path) == ["core/x.py:2 imports sink.job"]
    assert violations("sink", tmp_path) == ["sink/y.py:1 imports serve.logs"]


def unit_of(module: str) -> str:
    """The part of the tree a module belongs to: a top-level package's sub-package or module
    (``serve.api.app`` -> ``serve.api``, ``serve.consent`` -> ``serve.consent``)."""
    return ".".join(module.split(".")[:2])


def mutual_imports(root: Path = REPO) -> list[str]:
    """``a <-> b`` for every two parts of the tree (:func:`unit_of`) whose modules import each other."""
    imports: dict[str, set[str]] = {}
    for top in LAYERS:
        for path in sorted((root / top).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            for _line, target in imports_of(path):
                if target.split(".")[0] in LAYERS and unit_of(target) != unit_of(module):
                    imports.setdefault(unit_of(module), set()).add(unit_of(target))
    return sorted(
        f"{a} <-> {b}" for a, found in imports.items() for b in found if a < b and a in imports.get(b, ())
    )


def test_no_two_packages_import_each_other() -> None:
    """``serve.api`` and ``serve.consent`` once did (the store raised HTTP errors), and ``chatlog.cli`` and
    ``chatlog.monitor`` (a ``python -m chatlog.monitor`` built from the command)."""
    assert mutual_imports() == []


def test_the_check_finds_two_packages_that_import_each_other(tmp_path: Path) -> None:
    (tmp_path / "serve" / "api").mkdir(parents=True)
    (tmp_path / "serve" / "api" / "app.py").write_text("from serve.consent import x\n")
    (tmp_path / "serve" / "consent.py").write_text("from serve.api.errors import y\n")
    assert mutual_imports(tmp_path) == ["serve.api <-> serve.consent"]


def test_the_type_check_covers_every_package() -> None:
    """``make typecheck`` runs mypy on pyproject.toml's list: a package missing there goes unchecked, a
    package gone from the tree fails it (``bench`` once did, when it moved into the lab)."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(config["tool"]["mypy"]["packages"]) == {*LAYERS, "tests"}
