"""``skillctl pack`` and ``skillctl inspect``."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import emit_json, exclude_option, format_option, library_errors, output_option, progress
from skillctl.cli.profile_option import profile_option
from skillctl.errors import SkillctlError
from skillctl.words import count


def skill_folders(paths: tuple[Path, ...], exclude: tuple[str, ...] = ()) -> list[Path]:
    """Skill folders named by PATH arguments (each may be a folder of many skills), found as
    ``validate`` finds them; a note about the search (a depth or folder limit reached) goes to
    stderr, a problem (nothing found, unreadable) stops the command."""
    from skillctl.skill.discovery import Excludes, discover

    excludes = Excludes(exclude)
    folders: list[Path] = []
    for p in paths or (Path("."),):
        for folder, shown, problem in discover(p, excludes):
            if problem is not None:
                if problem.severity == "error":
                    raise click.ClickException(problem.format())
                progress(problem.format())
                continue
            assert folder is not None
            folders.append(folder)
    return folders


@click.command("pack")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@output_option("out_dir", old=("--out",), default=Path("."), help="Folder for the .skill.tgz files.")
@click.option("--version", "version", help="Version to pack as, when SKILL.md has no metadata.version.")
@click.option("--dry-run", is_flag=True,
              help="Write nothing: list each skill with its version, files, sizes and digests, and whether its bundle "
              "would be new, unchanged, changed (replacing another file of that name) or refused (and why).")
@profile_option
@exclude_option
@format_option
@library_errors
def pack_cmd(paths: tuple[Path, ...], out_dir: Path, version: str | None, dry_run: bool, profile: str, exclude: tuple[str, ...],
             fmt: str) -> None:
    """Validate and pack skills into reproducible NAME-VERSION.skill.tgz bundles.

    PATH is a skill folder or a folder searched for skills, as `validate` searches it (hidden
    client folders such as .claude/skills included; --exclude leaves folders out). An invalid
    skill is refused with its diagnostics (--profile: a client's documented fields are valid
    too). The same content always gives the same bytes (sorted entries, fixed mtime from
    SOURCE_DATE_EPOCH or 1980-01-01, uid/gid 0, modes 0644/0755). A .skillignore (gitignore
    syntax) leaves files out. Prints the sha256 of the archive and of the uncompressed tar.
    """
    from skillctl.bundle import PackedBundle, write_bundle
    from skillctl.registry.prepare import prepare_skill
    from skillctl.skill import check_skill

    folders = skill_folders(paths, exclude)
    if dry_run:
        from skillctl.cli.dry_run import show_plan
        from skillctl.registry.plan import plan_pack, prepare_each

        show_plan(plan_pack(prepare_each(folders, version=version, profile=profile), out_dir), fmt, {"out": str(out_dir)})
        return
    results = []
    failed = 0
    for folder in folders:
        # Every diagnostic of an invalid skill, not just the first: the author fixes all at once.
        report = check_skill(folder, profile=profile)
        if report.skill is None:
            failed += 1
            for diag in report.errors or report.diagnostics:
                click.echo(diag.format(), err=True)
            continue
        try:
            prepared = prepare_skill(report.skill, version=version)  # validated just above
        except SkillctlError as exc:
            failed += 1
            click.echo(f"error: {exc}", err=True)
            continue
        packed = PackedBundle(prepared.name, prepared.data, prepared.digest, prepared.tar_digest, prepared.size, prepared.files)
        path = write_bundle(packed, out_dir, prepared.version)
        entry = {
            "name": prepared.name,
            "version": prepared.version,
            "path": str(path),
            "digest": prepared.digest,
            "tar_digest": prepared.tar_digest,
            "size": prepared.size,
            "files": len(prepared.files),
        }
        results.append(entry)
        if fmt == "text":
            click.echo(f"{path}  {prepared.digest}  ({prepared.size} bytes, {len(prepared.files)} files; tar {prepared.tar_digest})")
    if fmt == "json":
        emit_json(results[0] if len(results) == 1 and not failed and len(paths) <= 1 and results else results)
    if failed:
        raise click.ClickException(f"{count(failed, 'skill')} could not be packed (see above); nothing was written for {'them' if failed != 1 else 'it'}")


@click.command("inspect")
@click.argument("bundle", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@format_option
@library_errors
def inspect_cmd(bundle: Path, fmt: str) -> None:
    """Check a .skill.tgz without unpacking it to disk, and show what it holds.

    Every member is checked (regular files and folders only, no absolute paths, '..', links
    or devices, one top folder, size and count caps) before anything is believed.
    """
    from skillctl.bundle import read_bundle_file
    from skillctl.skill.document import parse_skill_md

    # read_bundle_file refuses an oversized file or a FIFO before reading a byte of it
    contents = read_bundle_file(bundle)
    doc, diags = parse_skill_md(contents.files.get("SKILL.md", b""), f"{contents.name}/SKILL.md")
    meta = doc.metadata if doc else {}
    version = (meta.get("metadata") or {}).get("version") if isinstance(meta.get("metadata"), dict) else None
    info = {
        "name": contents.name,
        "version": version,
        "description": meta.get("description"),
        "digest": contents.digest,
        "tar_digest": contents.tar_digest,
        "size": contents.size,
        "files": sorted(contents.files),
        "unpacked_size": sum(len(b) for b in contents.files.values()),
    }
    if fmt == "json":
        emit_json(info)
        return
    click.echo(f"{info['name']} {version or '(no version)'}  {info['digest']}")
    click.echo(f"  {len(info['files'])} files, {info['unpacked_size']} bytes unpacked, {info['size']} bytes packed")
    for f in info["files"]:
        click.echo(f"  {f}")
    for d in diags:
        progress(d.format())
