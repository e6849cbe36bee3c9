"""A file the code makes (the settings reference, the benchmark page): written, or checked current."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from core.errors import ChatlogError

if TYPE_CHECKING:
    from pathlib import Path


def write_or_check(output: Path, text: str, *, check: bool, command: str) -> None:
    """Write ``text`` to ``output`` (its folder made when missing); with ``check``, write nothing and exit 1
    when the file is not ``text`` (saying ``command`` makes it again). Either way, one line says which."""
    if check:
        current = output.read_text(encoding="utf-8") if output.is_file() else ""
        if current != text:
            typer.echo(f"{output} is out of date: run {command}", err=True)
            raise typer.Exit(1)
        typer.echo(f"{output} is up to date")
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:  # a directory, a full disk, no permission: one line
        raise ChatlogError(f"cannot write --output {output}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {output}")
