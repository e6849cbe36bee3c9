"""Every command README.md and docs/*.md show stays runnable as written.

A ``chatlog ...`` line of a shell block (```bash, ```sh, ```console; in any other block, a line that starts
with ``chatlog``) must name a command of the command line, with options that command has, and parse as
it stands (arguments, values of the right kind); a ``chatlog ...`` in the prose's inline code is a synopsis
(``[--since T]``, ``CHANNEL|--channel-id ID``, ``NAME`` for a placeholder): its command must exist and each
``--option`` must be one of its options. A ``make TARGET`` anywhere in them must be a target of the
Makefile. Checked on the command line's own objects (the Typer app of :mod:`chatlog.cli.main` as click
commands), without running a command or reaching a server.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import typer

from chatlog.cli import main

REPO: Final = Path(__file__).resolve().parents[2]
SHELL_BLOCKS: Final = frozenset({"bash", "sh", "shell", "console"})
CHATLOG: Final = frozenset({"chatlog", ".venv/bin/chatlog", "$(BIN)/chatlog"})
"""How the docs name the command: installed, in the checkout's venv, or in the Makefile."""
SEPARATORS: Final = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;"})
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION: Final = re.compile(r"\$\(([^()]*)\)")
_FENCE: Final = re.compile(r"^\s*```\s*([\w-]*)")
_INLINE: Final = re.compile(r"`([^`\n]+)`")
_PLACEHOLDER: Final = re.compile(r"^(?:[A-Z][A-Z0-9_]*|\.\.\.|<[^>]*>)$")


def documents(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Use:
    """A command as a document shows it: ``exact`` (a shell line) or a synopsis (inline code)."""

    where: str
    text: str
    exact: bool


def uses(path: Path, root: Path = REPO) -> Iterator[Use]:
    """The shell lines and inline ``chatlog``/``make`` code of a Markdown file."""
    name = path.relative_to(root).as_posix()
    fence: str | None = None
    pending = ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opened = _FENCE.match(line)
        if opened and fence is None:
            fence = opened.group(1).lower()
            continue
        if opened:
            fence = None
            continue
        where = f"{name}:{number}"
        if fence is None:
            for span in _INLINE.findall(line):
                if span.startswith(("chatlog ", "make ")) or span == "chatlog":
                    yield Use(where, span, exact=False)
            continue
        if fence in SHELL_BLOCKS:
            text = line.strip()
            if fence == "console":
                if not text.startswith("$ "):
                    continue
                text = text[2:]
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            yield Use(where, pending + text, exact=True)
            pending = ""
        elif line.startswith(("chatlog ", ".venv/bin/chatlog ")):
            yield Use(where, line, exact=True)


def commands(line: str) -> Iterator[list[str]]:
    """The simple commands of a shell line, as words: split at ``;``, ``&&``, ``|``, ``&``..., each
    ``$(...)`` a command of its own; a comment ends the line. Unbalanced quotes raise ValueError."""
    for inner in _SUBSTITUTION.findall(line):
        yield from commands(inner)
    lexer = shlex.shlex(_SUBSTITUTION.sub("SUBSTITUTED", line), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    for token in lexer:
        if token in SEPARATORS:
            if words:
                yield words
            words = []
        else:
            words.append(token)
    if words:
        yield words


def invocations(words: list[str]) -> tuple[str, list[str]] | None:
    """``("chatlog", args)`` or ``("make", args)`` when a simple command runs one of them: directly (after
    ``VAR=value`` assignments), after ``--`` (``kubectl exec ... -- chatlog``), or as the compose file's
    ``cli`` service (``docker compose run --rm cli ARGS``, whose entry point is ``chatlog``)."""
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return None
    if words[0] in CHATLOG:
        return "chatlog", words[1:]
    if words[0] == "make":
        return "make", words[1:]
    if words[:3] == ["docker", "compose", "run"] and "cli" in words:
        return "chatlog", words[words.index("cli") + 1 :]
    if "--" in words:
        after = words[words.index("--") + 1 :]
        if after and after[0] in CHATLOG:
            return "chatlog", after[1:]
    return None


# -- the command line ----------------------------------------------------------------------------------------


def application() -> Any:
    """The ``chatlog`` command as click sees it, every command registered (``chatlog bench`` included)."""
    if not main.app.registered_commands:
        main._register()
    return typer.main.get_command(main.app)


def _options(command: Any, ctx: Any) -> set[str]:
    names = set(command.get_help_option_names(ctx))
    for param in command.params:
        if isinstance(param, typer.core.TyperOption):
            names.update(param.opts, param.secondary_opts)
    return names


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-" and not re.match(r"^-\d", word)


def check_chatlog(args: list[str], *, exact: bool, app: Any = None) -> list[str]:
    """What is wrong with ``chatlog ARGS`` (nothing: it runs as written).

    The words name a command (groups, then a command); every option word must be one of that command's
    options; ``exact`` words must also parse (arguments given, values of the right kind)."""
    command = app if app is not None else application()
    ctx = command.make_context("chatlog", [], resilient_parsing=True)
    path = ["chatlog"]
    words = list(args)
    while isinstance(command, typer.core.TyperGroup):
        if not words:
            return ["a group without its command"] if exact else []
        word = words[0]
        sub = command.get_command(ctx, word)
        if sub is None:
            if word in ("--help", "-h"):
                return []
            if not exact and _PLACEHOLDER.match(word):
                return []
            return [f"{' '.join(path)} has no command {word!r}"]
        path.append(word)
        words = words[1:]
        command = sub
        ctx = command.make_context(word, [], parent=ctx, resilient_parsing=True)
    known = _options(command, ctx)
    problems = [
        f"{' '.join(path)} has no option {word.split('=', 1)[0]}"
        for word in words
        if _is_option(word) and word.split("=", 1)[0] not in known
    ]
    if exact and not problems:
        try:
            command.make_context(path[-1], list(words), parent=ctx.parent)
        except typer.Exit:
            pass  # --help
        except typer.TyperException as exc:
            problems.append(f"{' '.join(path)}: {exc}")
    return problems


def synopsis_words(text: str) -> list[str]:
    """A synopsis as words: ``[--since T]`` and ``A|B`` become ``--since T`` and ``A B``."""
    return [
        part for word in text.replace("[", " ").replace("]", " ").split() for part in word.split("|") if part
    ]


def make_targets(makefile: Path = REPO / "Makefile") -> set[str]:
    targets: set[str] = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9][\w.-]*(?:[ \t]+[A-Za-z0-9][\w.-]*)*)[ \t]*:(?!=)", line)
        if match:
            targets.update(match.group(1).split())
    return targets


def check_make(args: list[str], targets: set[str]) -> list[str]:
    named = [a for a in args if not a.startswith("-") and not _ASSIGNMENT.match(a)]
    return [f"the Makefile has no target {name!r}" for name in named if name not in targets]


def problems_of(use: Use, targets: set[str], app: Any = None) -> list[str]:
    if not use.exact:
        words = synopsis_words(use.text)
        if words[0] == "make":
            return check_make(words[1:2], targets)
        return check_chatlog(words[1:], exact=False, app=app)
    try:
        found = [invocations(words) for words in commands(use.text)]
    except ValueError as exc:
        return [f"not a shell line: {exc}"]
    out = []
    for hit in found:
        if hit is None:
            continue
        program, args = hit
        out += check_make(args, targets) if program == "make" else check_chatlog(args, exact=True, app=app)
    return out


def all_uses(root: Path = REPO) -> list[Use]:
    return [use for path in documents(root) for use in uses(path, root)]


# -- the tests ---------------------------------------------------------------------------------------------


def test_every_command_in_the_readme_and_the_docs_runs_as_written() -> None:
    app, targets = application(), make_targets()
    bad = [f"{use.where}: {use.text}: {p}" for use in all_uses() for p in problems_of(use, targets, app)]
    assert bad == []


def test_the_docs_are_read_for_commands() -> None:
    found = all_uses()
    exact = [use.text for use in found if use.exact]
    assert sum("chatlog" in text for text in exact) >= 40
    assert any(text.startswith("make demo   # set up everything") for text in exact)
    assert any(use.text == "chatlog bench report" for use in found)
    assert any(not use.exact and use.where.startswith("docs/") for use in found)


def test_the_readme_opens_with_the_two_commands() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[2:6] == [
        "```bash",
        "make demo   # set up everything on a fresh machine, start the local stack, run the pipeline",
        "make test   # set up everything, then lint, type-check, unit and integration tests on the real "
        "stack",
        "```",
    ]
    assert len(lines) <= 300


@pytest.mark.parametrize(
    ("text", "exact", "wrong"),
    [
        ("chatlog logs forsen --since 2026-11-21 --no-such-option", True, "has no option --no-such-option"),
        ("chatlog logs CHANNEL [--no-such-option X]", False, "has no option --no-such-option"),
        ("chatlog stack up --purge", True, "has no option --purge"),
        ("chatlog nosuchcommand --x", True, "has no command 'nosuchcommand'"),
        ("chatlog stack sideways", False, "has no command 'sideways'"),
        ("chatlog coverage", True, "Missing parameter: channel"),
        ("chatlog ingest --replica zero", True, "valid integer"),
        ("make nosuchtarget", True, "no target 'nosuchtarget'"),
        ("make nosuchtarget", False, "no target 'nosuchtarget'"),
        ('chatlog optout add --reason "unbalanced', True, "not a shell line"),
        ("docker compose run --rm cli logs forsen --colour", True, "has no option --colour"),
        ("kubectl -n chatlog exec deploy/x -- chatlog status --nope", True, "has no option --nope"),
        ('eval "$(chatlog stack env --nods 3)"', True, "has no option --nods"),
    ],
)
def test_the_check_finds_what_would_not_run(text: str, exact: bool, wrong: str) -> None:
    problems = problems_of(Use("x.md:1", text, exact), make_targets())
    assert any(wrong in p for p in problems), problems


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("chatlog logs forsen --since 2026-11-21T15:00 --format text   # a comment --not-an-option", True),
        ("CHATLOG_SERVE_PORT=8026 chatlog serve &   # a peer", True),
        ('eval "$(chatlog stack env --nodes 3)"', True),
        ("kubectl -n chatlog exec deploy/chatlog-ingest-r0 -- chatlog status", True),
        ("docker compose run --rm cli sink --backfill --from 2026-11-21T00:00:00Z", True),
        ("kubectl -n chatlog get pods", True),
        ("make bench JUSTLOG=/opt/justlog", True),
        ("chatlog logs CHANNEL|--channel-id ID [--user LOGIN | --user-id ID] [--limit N]", False),
        ("chatlog bench NAME --help", False),
        ("chatlog stack", False),
    ],
)
def test_the_check_passes_what_runs(text: str, exact: bool) -> None:
    assert problems_of(Use("x.md:1", text, exact), make_targets()) == []


def test_shell_blocks_and_inline_code_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "Run `chatlog pack --level 9` daily, or `make up`.\n"
        "```bash\nCHATLOG_X=1 chatlog serve \\\n  --port 8026 &\n```\n"
        "```console\n$ chatlog status\nreplica 0: ...\n```\n"
        "```text\nchatlog names forsen\nnot a command\n```\n",
        encoding="utf-8",
    )
    found = [(use.where, use.text, use.exact) for use in all_uses(tmp_path)]
    assert found == [
        ("README.md:1", "chatlog pack --level 9", False),
        ("README.md:1", "make up", False),
        ("README.md:4", "CHATLOG_X=1 chatlog serve  --port 8026 &", True),
        ("README.md:7", "chatlog status", True),
        ("README.md:11", "chatlog names forsen", True),
    ]
