"""Registry commands: list, show, versions, pull, yank, unyank (publish: ``cli/publish.py``; deleting a
version: ``skillctl registry remove``)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import click

from skillctl.cli.common import (emit_json, fit, format_option, library_errors, open_registry_for_cli, output_option,
                                 registry_option, terminal_width)


def _when(ts: int) -> str:
    if not ts:  # a well-known site publishes no dates
        return "unknown"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M")


@click.command("list")
@registry_option
@format_option
@library_errors
def list_cmd(registry_url: str | None, fmt: str) -> None:
    """List the skills in the registry with their default and latest versions.

    Descriptions take the width of the terminal (COLUMNS); a cut one ends with "…", and
    --format json has them whole."""
    reg = open_registry_for_cli(registry_url)
    skills = reg.list_skills()
    if fmt == "json":
        emit_json([s.to_dict() for s in skills])
        return
    if not skills:
        click.echo(f"no skills in {reg.url}")
        return
    width = max(len(s.name) for s in skills)
    columns = terminal_width()
    for s in skills:
        row = f"{s.name:<{width}}  {s.default_version or '-':<10} {s.id}  "
        # the description takes what the terminal has left, at least a few words' worth
        click.echo(row + fit(s.description, max(columns - len(row), 20)))


@click.command("show")
@click.argument("ref")
@click.option("--pre", "prereleases", is_flag=True, help="Let ranges match pre-releases.")
@registry_option
@format_option
@library_errors
def show(ref: str, prereleases: bool, registry_url: str | None, fmt: str) -> None:
    """Show a skill and the version REF resolves to (NAME, NAME@RANGE, skill_ID[@VERSION])."""
    reg = open_registry_for_cli(registry_url)
    rec = reg.resolve_record(ref, prereleases=prereleases)
    skill = reg.get_skill(rec.skill_id)
    if fmt == "json":
        emit_json({**skill.to_dict(), "resolved": rec.to_dict()})
        return
    click.echo(f"{rec.name}@{rec.version}{'  (yanked)' if rec.yanked else ''}")
    click.echo(f"  id:          {rec.skill_id}")
    click.echo(f"  description: {rec.description}")
    click.echo(f"  digest:      {rec.digest}")
    if rec.tar_digest:
        click.echo(f"  tar digest:  {rec.tar_digest}")
    if rec.size:
        click.echo(f"  size:        {rec.size} bytes, {rec.files} files")
    if rec.artifact_type != "bundle":
        click.echo(f"  artifact:    {rec.artifact_type}")
    click.echo(f"  published:   {_when(rec.created_at)}{' UTC' if rec.created_at else ''}")
    if rec.index_url:
        click.echo(f"  index:       {rec.index_url}")
    if rec.artifact_url:
        click.echo(f"  artifact:    {rec.artifact_url}")
    if rec.mirrored_from:
        click.echo(f"  mirrored from: {rec.mirrored_from.url} ({rec.mirrored_from.digest})")
    click.echo(f"  default:     {skill.default_version}   latest: {skill.latest_version}   versions: {skill.versions}")


@click.command("versions")
@click.argument("name")
@registry_option
@format_option
@library_errors
def versions(name: str, registry_url: str | None, fmt: str) -> None:
    """List every version of a skill, newest first (yanked ones marked)."""
    reg = open_registry_for_cli(registry_url)
    recs = reg.versions(name)
    if fmt == "json":
        emit_json([r.to_dict() for r in recs])
        return
    for r in recs:
        flag = f"  yanked{': ' + r.yank_reason if r.yank_reason else ''}" if r.yanked else ""
        click.echo(f"{r.version:<16} {r.digest[:23]}…  {_when(r.created_at)}{flag}")


@click.command("pull")
@click.argument("ref")
@output_option("out_dir", old=("--out",), default=Path("."), help="Folder to unpack into (the skill lands in DIR/NAME/).")
@click.option("--pre", "prereleases", is_flag=True, help="Let ranges match pre-releases.")
@click.option("--force", is_flag=True, help="Replace an existing DIR/NAME folder.")
@registry_option
@format_option
@library_errors
def pull(ref: str, out_dir: Path, prereleases: bool, force: bool, registry_url: str | None, fmt: str) -> None:
    """Fetch a skill version, verify its digest and unpack it safely into DIR/NAME/ (-o/--output)."""
    from skillctl.bundle import read_artifact, write_contents

    with open_registry_for_cli(registry_url) as reg:  # one run: fetch reuses what resolve read (an OCI pin: 2 requests)
        rec = reg.resolve(ref, prereleases=prereleases)
        data = reg.fetch(rec)
    contents = read_artifact(data, rec.artifact_type, expected_name=rec.name, source=f"{rec.name}@{rec.version}")
    folder = write_contents(contents, out_dir, overwrite=force)
    if fmt == "json":
        emit_json({"name": rec.name, "version": rec.version, "id": rec.id, "digest": rec.digest, "path": str(folder)})
    else:
        click.echo(f"{rec.name}@{rec.version} -> {folder}  ({rec.digest})")


@click.command("yank")
@click.argument("ref")
@click.option("--reason", default="", help="Why (shown by `versions`).")
@registry_option
@format_option
@library_errors
def yank(ref: str, reason: str, registry_url: str | None, fmt: str) -> None:
    """Hide NAME@VERSION from ranges and `latest`; exact pins still fetch it."""
    rec = open_registry_for_cli(registry_url).set_yanked(ref, True, reason)
    emit_json(rec.to_dict()) if fmt == "json" else click.echo(f"yanked {rec.name}@{rec.version}")


@click.command("unyank")
@click.argument("ref")
@registry_option
@format_option
@library_errors
def unyank(ref: str, registry_url: str | None, fmt: str) -> None:
    """Make a yanked NAME@VERSION resolvable by ranges again."""
    rec = open_registry_for_cli(registry_url).set_yanked(ref, False)
    emit_json(rec.to_dict()) if fmt == "json" else click.echo(f"unyanked {rec.name}@{rec.version}")
