"""``skillctl init``: scaffold a skill."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, output_option
from skillctl.skill.scaffold import scaffold


@click.command("init")
@click.argument("name")
@output_option("parent", old=("--dir",), default=Path("."), help="Folder to create the skill in (e.g. skills/).")
@click.option("-d", "--description", help="One-line description (what the skill does and when to use it).")
@format_option
@library_errors
def init_cmd(name: str, parent: Path, description: str | None, fmt: str) -> None:
    """Create a new skill folder NAME with SKILL.md, scripts/ and references/.

    The result passes `skillctl validate --strict`; edit the description and instructions.
    """
    folder = scaffold(name, parent, description)
    if fmt == "json":
        emit_json({"name": name, "path": str(folder)})
    else:
        click.echo(f"created {folder}/ (SKILL.md, scripts/run.sh, references/notes.md)")
        click.echo(f"next: edit {folder}/SKILL.md, then run: skillctl validate {folder}")
