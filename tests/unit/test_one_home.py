"""One home per concept (issue 33), enforced: each rule below lives in one module and everything else calls
it, so no copy can start to disagree with it. Each check reads the source (AST, no import) and has a test
that it finds what it forbids."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

REPO: Final = Path(__file__).resolve().parents[2]
PRODUCT: Final = ("schemas", "core", "consent", "ingest", "sink", "serve", "chatlog")
"""The packages that run (the operator's tools included); lab/bench/ measures alternatives on purpose."""

PARSER: Final = frozenset({"core/irc_parse.py", "core/irc_tags.py"})
STORED_LINE: Final = "schemas/stored_line.py"
"""The stored-line format (a line without the tag values its row's key holds) is a contract: schemas/."""
RULE: Final = "consent/rule.py"
LOGINS: Final = "core/logins.py"
TIMES: Final = "core/times.py"
ERRORS: Final = "core/errors.py"


def _sources(root: Path, packages: tuple[str, ...]) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str, list[Any]]]:
    """Every method call ``x.name(...)`` with the constant values of its arguments (None where not one)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
            yield node, node.func.attr, args


def _tree(root: Path, files: dict[str, str]) -> Path:
    """``root`` with ``files`` (path -> text) written under it: a tree for a check to find things in."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# -- the IRC line is parsed in core/irc_parse.py only ------------------------------------------------------

_FRAMING: Final = {"@", ":", " :"}
"""What a hand-made IRC parser looks for: the tag section's ``@``, the prefix's or trailing's ``:``."""


def hand_parsers(root: Path = REPO) -> list[str]:
    """``file:line`` of every ``.startswith("@")``, ``.startswith(":")``, ``.lstrip(":")``,
    ``.partition(" :")``, ``.split(" :")``, ``.find(" :")`` and ``x[0] == "@"``-style test outside the parser
    and the stored-line format: a mini-parser of IRC lines."""
    out = set()
    for name, tree in _sources(root, PRODUCT):
        if name in PARSER or name == STORED_LINE:
            continue
        for node, method, args in _calls(tree):
            first = args[0] if args else None
            if (
                (method == "startswith" and first in ("@", ":"))
                or (method == "lstrip" and first == ":")
                or (method in ("partition", "split", "find", "index") and first == " :")
            ):
                out.add(f"{name}:{node.lineno}")
        for compare in ast.walk(tree):
            if isinstance(compare, ast.Compare) and isinstance(compare.left, ast.Subscript):
                constants = [c.value for c in compare.comparators if isinstance(c, ast.Constant)]
                if any(c in ("@", ":") for c in constants):
                    out.add(f"{name}:{compare.lineno}")
    return sorted(out)


def test_the_check_finds_a_mini_parser(tmp_path: Path) -> None:
    sender = (
        "def sender(line: str) -> str:\n"
        "    if line.startswith('@'):\n"
        "        line = line.partition(' ')[2]\n"
        "    return line[1:] if line[:1] == ':' else line\n"
    )
    assert hand_parsers(_tree(tmp_path, {"serve/x.py": sender})) == ["serve/x.py:2", "serve/x.py:4"]


# -- whose event it is: consent/rule.py ---------------------------------------------------------------------

_TARGET_TAGS: Final = {"target-user-id", "login"}
"""The tags that name the user a moderation event targets (the ``login`` tag is also a sender's)."""


def target_readers(root: Path = REPO) -> list[str]:
    """``file:line`` of every read of a ``target-user-id`` or ``login`` tag (``tags.get(...)``,
    ``tags[...]``) outside the rule and the parser: a second answer to "whose event is this"."""
    out = set()
    for name, tree in _sources(root, PRODUCT):
        if name == RULE or name in PARSER or name == "core/testing.py":  # testing builds lines
            continue
        for node, method, args in _calls(tree):
            if method == "get" and args[:1] and args[0] in _TARGET_TAGS and _is_tags(node.func.value):  # type: ignore[attr-defined]
                out.add(f"{name}:{node.lineno}")
        for sub in ast.walk(tree):
            if (
                isinstance(sub, ast.Subscript)
                and isinstance(sub.slice, ast.Constant)
                and sub.slice.value in _TARGET_TAGS
                and _is_tags(sub.value)
            ):
                out.add(f"{name}:{sub.lineno}")
    return sorted(out)


def _is_tags(node: ast.expr) -> bool:
    """``tags`` or ``<anything>.tags``: an event's tags."""
    return (isinstance(node, ast.Name) and node.id == "tags") or (
        isinstance(node, ast.Attribute) and node.attr == "tags"
    )


def test_the_check_finds_a_second_whose(tmp_path: Path) -> None:
    target = "def target(event):\n    return event.tags.get('target-user-id') or event.tags['login']\n"
    assert target_readers(_tree(tmp_path, {"serve/x.py": target})) == ["serve/x.py:2"]


# -- the small shared rules of core/ ------------------------------------------------------------------------


def small_rule_copies(root: Path = REPO) -> list[str]:
    """``file:line what`` of each copy of a small rule that core/ owns: the moderation kinds and the kinds a
    user sends (:data:`core.irc_parse.MODERATION_KINDS`, :data:`~core.irc_parse.USER_KINDS`), a login as
    stored (:func:`core.logins.login_of`), a UTC day of epoch ms and back and the time now as epoch ms
    (:mod:`core.times`), a text as one line (:func:`core.errors.one_line`)."""
    out: list[str] = []
    for name, tree in _sources(root, PRODUCT):
        for node in ast.walk(tree):
            if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and name not in PARSER:
                values = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if values == {"CLEARCHAT", "CLEARMSG"}:
                    out.append(f"{name}:{node.lineno} moderation kinds")
                elif values == {"PRIVMSG", "USERNOTICE"}:
                    out.append(f"{name}:{node.lineno} user kinds")
            if name != TIMES and isinstance(node, ast.BinOp) and _is_now_ms(node):
                out.append(f"{name}:{node.lineno} now in ms")
        for node, method, args in _calls(tree):
            if name != LOGINS and method in ("lstrip", "removeprefix") and args[:1] == ["#"]:
                inner = ast.unparse(node)
                if ".lower()" in inner or _called_on_result(tree, node, "lower"):
                    out.append(f"{name}:{node.lineno} login")
            # schemas/ imports nothing of the project: its keys' time arithmetic (buckets, periods) is its own
            times_rule = name != TIMES and not name.startswith("schemas/")
            if times_rule and method == "timegm":
                out.append(f"{name}:{node.lineno} day to ms")
            if times_rule and method == "date" and not args:
                receiver = node.func.value  # type: ignore[attr-defined]
                if isinstance(receiver, ast.Call) and ast.unparse(receiver.func).endswith("fromtimestamp"):
                    out.append(f"{name}:{node.lineno} ms to day")
            if name != ERRORS and method == "join" and isinstance(node.func, ast.Attribute):
                joiner = node.func.value
                if isinstance(joiner, ast.Constant) and joiner.value == " " and _is_split_of_str(node.args):
                    out.append(f"{name}:{node.lineno} one_line")
    return sorted(out, key=lambda hit: (hit.split(":")[0], int(hit.split(":")[1].split()[0]), hit))


def _is_now_ms(node: ast.BinOp) -> bool:
    """``time.time() * 1000`` or ``time.time_ns() // 1_000_000``: the time now as epoch ms."""
    call, factor = node.left, node.right
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(factor, ast.Constant)
    ):
        return False
    if isinstance(node.op, ast.Mult):
        return call.func.attr == "time" and factor.value == 1000
    return isinstance(node.op, ast.FloorDiv) and call.func.attr == "time_ns" and factor.value == 1_000_000


def _called_on_result(tree: ast.AST, call: ast.Call, method: str) -> bool:
    """Whether ``call``'s result is the receiver of ``.method()``."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == method
        and n.func.value is call
        for n in ast.walk(tree)
    )


def _is_split_of_str(args: list[ast.expr]) -> bool:
    """``" ".join(str(x).split())``: every run of white space one space."""
    if len(args) != 1 or not isinstance(args[0], ast.Call) or not isinstance(args[0].func, ast.Attribute):
        return False
    split = args[0]
    return split.func.attr == "split" and not split.args  # type: ignore[attr-defined]


def test_the_check_finds_copies_of_the_small_rules(tmp_path: Path) -> None:
    copies = (
        "import calendar\n"
        "from datetime import UTC, datetime\n"
        "KINDS = frozenset({'CLEARMSG', 'CLEARCHAT'}), ('USERNOTICE', 'PRIVMSG')\n"
        "def login(name: str) -> str:\n"
        "    return name.strip().lstrip('#').lower()\n"
        "def day(ms: int) -> object:\n"
        "    return datetime.fromtimestamp(ms / 1000, UTC).date()\n"
        "def ms(d: object) -> int:\n"
        "    return calendar.timegm(d.timetuple()) * 1000\n"
        "def line(e: object) -> str:\n"
        "    return ' '.join(str(e).split())\n"
        "def now() -> int:\n"
        "    return int(time.time() * 1000) + time.time_ns() // 1_000_000\n"
    )
    assert small_rule_copies(_tree(tmp_path, {"sink/x.py": copies})) == [
        "sink/x.py:3 moderation kinds",
        "sink/x.py:3 user kinds",
        "sink/x.py:5 login",
        "sink/x.py:7 ms to day",
        "sink/x.py:9 day to ms",
        "sink/x.py:11 one_line",
        "sink/x.py:13 now in ms",
        "sink/x.py:13 now in ms",
    ]


# -- tests: no test file imports another, and they mirror the tree ----------------------------------------


def imports_of_test_files(root: Path = REPO) -> list[str]:
    """``file:line module`` of every import of a test file or a ``conftest`` by a file under tests/."""
    out = []
    for name, tree in _sources(root, ("tests",)):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                last = module.rsplit(".", 1)[-1]
                if last.startswith("test_") or last == "conftest":
                    out.append(f"{name}:{node.lineno} {module}")
    return out


def test_the_check_finds_an_import_of_a_test_file(tmp_path: Path) -> None:
    imports = "from tests.unit.test_b import helper\nimport tests.conftest\nfrom tests.doubles import x\n"
    assert imports_of_test_files(_tree(tmp_path, {"tests/test_a.py": imports})) == [
        "tests/test_a.py:1 tests.unit.test_b",
        "tests/test_a.py:2 tests.conftest",
    ]


NOT_MODULES: Final = frozenset({"deploy"})
"""tests/unit/deploy tests the Dockerfile, compose file and manifests, which are no Python modules."""


def unmirrored(root: Path = REPO) -> list[str]:
    """Unit test files under a package's folder whose name names no module of that folder:
    ``tests/unit/a/b/test_c.py`` or ``test_c_more.py`` tests ``a/b/c.py`` or the package ``a/b/c/``."""
    out = []
    unit = root / "tests" / "unit"
    for path in sorted(unit.rglob("test_*.py")):
        folder = path.parent.relative_to(unit)
        if folder == Path(".") or folder.parts[0] in NOT_MODULES:
            continue
        stem = path.stem.removeprefix("test_")
        source = root / folder
        names = {p.stem for p in source.glob("*.py")} | {p.name for p in source.glob("*/") if p.is_dir()}
        if not any(stem == n or stem.startswith(n + "_") for n in names - {"__init__"}):
            out.append(path.relative_to(root).as_posix())
    return out


def test_the_check_finds_a_test_in_the_wrong_folder(tmp_path: Path) -> None:
    tests = ("sink/job/test_optouts.py", "sink/side/test_optout_follower.py", "sink/job/test_stream_x.py")
    sources = {"sink/side/optout_follower.py": "", "sink/job/stream.py": ""}
    _tree(tmp_path, sources | {f"tests/unit/{test}": "" for test in tests})
    assert unmirrored(tmp_path) == ["tests/unit/sink/job/test_optouts.py"]


# -- every check on this tree -------------------------------------------------------------------------------

CHECKS: Final[tuple[Callable[[], list[str]], ...]] = (
    hand_parsers,  # no module outside the parser takes an IRC line apart by hand
    target_readers,  # who an event concerns is decided in the consent rule only
    small_rule_copies,  # each small rule lives once in core
    imports_of_test_files,  # no test file imports another
    unmirrored,  # the unit tests mirror the tree
)


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_tree_has_nothing_a_check_forbids(check: Callable[[], list[str]]) -> None:
    assert check() == []
