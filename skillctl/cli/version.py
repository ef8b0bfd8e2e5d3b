"""``skillctl version``: print or bump a skill's version in SKILL.md."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors
from skillctl.skill.versionfile import set_version, read_version


@click.command("version")
@click.argument("path", type=click.Path(path_type=Path), default=Path("."))
@click.argument("new", required=False, metavar="[major|minor|patch|X.Y.Z]")
@format_option
@library_errors
def version_cmd(path: Path, new: str | None, fmt: str) -> None:
    """Print the version of the skill at PATH, or set it.

    With major, minor or patch the version is bumped (npm semantics: bumping a pre-release
    releases it); with X.Y.Z it is set. Only the `version:` line under `metadata:` in SKILL.md is
    rewritten (it is added when missing); the rest of the file is left byte for byte.
    """
    if new is None:
        old = read_version(path)
        if fmt == "json":
            emit_json({"path": str(path), "version": old})
        else:
            click.echo(old if old is not None else "(no version: set one with `skillctl version PATH 0.1.0`)")
        return
    old, updated = set_version(path, new)
    if fmt == "json":
        emit_json({"path": str(path), "previous": old, "version": updated})
    else:
        click.echo(f"{old or '(none)'} -> {updated}")
